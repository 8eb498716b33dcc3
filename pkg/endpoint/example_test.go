package endpoint_test

import (
	"context"
	"fmt"
	"io"

	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

type greetIn struct {
	Name string `json:"name"`
}

// newGreeter is a function's own piece: the endpoint as the environment
// configures it, with its tools on the endpoint's server. Its main is
//
//	func main() { endpoint.Main("greeter", newGreeter) }
func newGreeter(cfg *endpoint.Config, o endpoint.Options) (*endpoint.Endpoint, error) {
	o.Implementation = stateless.Implementation{Name: "greeter", Version: "1.0.0"}
	ep, err := endpoint.New(cfg, o)
	if err != nil {
		return nil, err
	}
	stateless.AddTool(ep.Server, &stateless.Tool{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, req *stateless.ToolRequest, in greetIn) (*stateless.CallToolResult, any, error) {
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("Hello, " + in.Name)}}, nil, nil
		})
	return ep, nil
}

// Example composes a function's endpoint with the settings of a local
// run (nothing set: claims, tasks and request state in memory, no
// authorization) and calls its tool as a client would.
func Example() {
	cfg, err := endpoint.LoadConfig(func(string) string { return "" })
	if err != nil {
		panic(err)
	}
	ep, err := newGreeter(cfg, endpoint.Options{Stdout: io.Discard})
	if err != nil {
		panic(err)
	}
	c := mcptest.New(nil, ep.Server)
	fmt.Println(c.CallTool("greet", greetIn{Name: "Ada"}).Text())
	// Output: Hello, Ada
}
