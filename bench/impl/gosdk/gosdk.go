// Package gosdk builds the official Go SDK's server
// (github.com/modelcontextprotocol/go-sdk) with the echo and add tools. It
// is a package of its own so that bench/cmd/gosdk links this peer alone.
package gosdk

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/serverless-mcp/mcp-lambda/bench/impl/tools"
)

// New returns the SDK's server, served statelessly with JSON responses as
// its documentation asks for 2026-07-28 over HTTP.
func New() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: tools.ServerName, Version: tools.ServerVersion}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: tools.EchoDesc},
		func(_ context.Context, _ *mcp.CallToolRequest, in tools.EchoIn) (*mcp.CallToolResult, tools.EchoOut, error) {
			return nil, tools.EchoOut(in), nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: tools.AddDesc},
		func(_ context.Context, _ *mcp.CallToolRequest, in tools.AddIn) (*mcp.CallToolResult, tools.AddOut, error) {
			return nil, tools.AddOut{Sum: in.A + in.B}, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}
