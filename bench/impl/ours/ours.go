// Package ours builds this project's stateless server with the echo and
// add tools. It is a package of its own so that bench/cmd/ours links our
// server and no peer.
package ours

import (
	"context"
	"net/http"

	"github.com/serverless-mcp/mcp-lambda/bench/impl/tools"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// NewServer returns the server itself, for the Lambda path
// (apigw.Handler), which does not go through net/http. Its handlers run
// apart from the request, as by default (see stateless.Tool.Inline).
func NewServer() *stateless.Server { return build(false) }

// NewInlineServer is NewServer with both tools declared Inline: their
// handlers run on the request's goroutine, as every peer runs its
// handlers.
func NewInlineServer() *stateless.Server { return build(true) }

func build(inline bool) *stateless.Server {
	s := stateless.NewServer(stateless.Implementation{Name: tools.ServerName, Version: tools.ServerVersion}, nil)
	stateless.AddTool(s, &stateless.Tool{Name: "echo", Description: tools.EchoDesc, Inline: inline},
		func(_ context.Context, _ *stateless.ToolRequest, in tools.EchoIn) (*stateless.CallToolResult, tools.EchoOut, error) {
			return nil, tools.EchoOut(in), nil
		})
	stateless.AddTool(s, &stateless.Tool{Name: "add", Description: tools.AddDesc, Inline: inline},
		func(_ context.Context, _ *stateless.ToolRequest, in tools.AddIn) (*stateless.CallToolResult, tools.AddOut, error) {
			return nil, tools.AddOut{Sum: in.A + in.B}, nil
		})
	return s
}

// New returns the server as an http.Handler.
func New() http.Handler { return NewServer() }

// NewInline returns the inline server as an http.Handler.
func NewInline() http.Handler { return NewInlineServer() }
