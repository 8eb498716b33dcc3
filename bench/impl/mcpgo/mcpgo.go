// Package mcpgo builds mcp-go's server (github.com/mark3labs/mcp-go) with
// the echo and add tools. It is a package of its own so that
// bench/cmd/mcpgo links this peer alone.
package mcpgo

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/serverless-mcp/mcp-lambda/bench/impl/tools"
)

// New returns mcp-go's streamable HTTP server in stateless mode
// (WithStateLess), with typed tools whose input and output schemas are
// inferred from the same Go types. Its logger is silenced, as the other
// implementations log nothing by default.
func New() http.Handler {
	s := server.NewMCPServer(tools.ServerName, tools.ServerVersion, server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription(tools.EchoDesc),
		mcp.WithInputSchema[tools.EchoIn](), mcp.WithOutputSchema[tools.EchoOut]()),
		mcp.NewStructuredToolHandler(func(_ context.Context, _ mcp.CallToolRequest, in tools.EchoIn) (tools.EchoOut, error) {
			return tools.EchoOut(in), nil
		}))
	s.AddTool(mcp.NewTool("add", mcp.WithDescription(tools.AddDesc),
		mcp.WithInputSchema[tools.AddIn](), mcp.WithOutputSchema[tools.AddOut]()),
		mcp.NewStructuredToolHandler(func(_ context.Context, _ mcp.CallToolRequest, in tools.AddIn) (tools.AddOut, error) {
			return tools.AddOut{Sum: in.A + in.B}, nil
		}))
	return server.NewStreamableHTTPServer(s,
		server.WithStateLess(true),
		server.WithStreamableHTTPLogger(slog.New(slog.DiscardHandler)))
}
