// Package ours builds this project's stateless server with the echo and
// add tools. It is a package of its own so that bench/cmd/ours links our
// server and no peer.
//
// The tools' schemas are generated from their Go types into
// toolschemas.json (TestToolSchemas keeps it true) and embedded, and both
// are flat, so the server infers no schema and needs no schema engine:
// that is how a function with flat tools is built to start fast. The
// binary links no schema library (pkg/stateless imports none; a function
// links package toolschema's only when it sets it).
package ours

import (
	"context"
	_ "embed"
	"net/http"

	"github.com/serverless-mcp/mcp-lambda/bench/impl/tools"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// NewServer returns the server itself, for the Lambda path
// (apigw.Handler), which does not go through net/http. Its handlers run
// as by default (see stateless.Tool.Inline): on the request's goroutine,
// watched, where the answer can leave without it (net/http,
// apigw.Handler.InvokeEarly), apart through apigw.Handler.Invoke.
func NewServer() *stateless.Server { return build(false, nil) }

// NewInlineServer is NewServer with both tools declared Inline: their
// handlers run on the request's goroutine, as every peer runs its
// handlers.
func NewInlineServer() *stateless.Server { return build(true, nil) }

// NewServerWith is NewServer with interceptors (package quota's
// server, the default quotas in front, is built so; it lives apart so
// that the cold-start subject, which links this package, links no quota
// and no AWS client).
func NewServerWith(ics ...stateless.Interceptor) *stateless.Server { return buildWith(false, nil, ics) }

//go:embed toolschemas.json
var toolSchemas []byte

// build makes the server; engine, for generating the schemas, infers
// them instead of taking them from toolschemas.json.
func build(inline bool, engine stateless.SchemaEngine) *stateless.Server {
	return buildWith(inline, engine, nil)
}

// buildWith is build with interceptors.
func buildWith(inline bool, engine stateless.SchemaEngine, ics []stateless.Interceptor) *stateless.Server {
	opts := &stateless.Options{ToolSchemas: toolSchemas}
	if engine != nil {
		opts = &stateless.Options{SchemaEngine: engine}
	}
	// No listen streams: the peers, stateless and answering in JSON, hold
	// none, and the buffered Lambda door advertises none, so that every
	// door, and the floor, answer server/discover alike.
	opts.Listen.Off = true
	opts.Interceptors = ics
	s := stateless.NewServer(stateless.Implementation{Name: tools.ServerName, Version: tools.ServerVersion}, opts)
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
