// Command mcp is the deployable MCP endpoint: inside AWS Lambda it serves
// API Gateway (HTTP API and REST) and function URL events; anywhere else
// it is a local HTTP server on MCP_ADDR (default 127.0.0.1:8080) at /mcp,
// with embedded defaults and no configuration needed.
//
// The demo it serves is the note book of package notebook. A fork puts
// its own tools in its place in newEndpoint, the one function here that
// names the demo.
package main

import (
	"github.com/serverless-mcp/mcp-lambda/notebook"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() { endpoint.Main("mcp", newEndpoint) }

// newEndpoint composes the endpoint this function serves: the production
// parts of package endpoint and the demo's tools. It is the place a fork
// changes: call endpoint.New(cfg, o) with your own Implementation in o,
// then add your tools to ep.Server (see the README's "Make it yours").
func newEndpoint(cfg *endpoint.Config, o endpoint.Options) (*endpoint.Endpoint, error) {
	return notebook.New(cfg, o, version)
}
