package mcptest_test

import (
	"context"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

type addIn struct {
	N int `json:"n"`
}

type countOut struct {
	Count int `json:"count"`
}

// TestClient: a tool author's test of a keyed tool, a failing tool, a
// resource whose URI is not ASCII and a refused request, through the
// server's own checks.
func TestClient(t *testing.T) {
	g := claims.New(claims.NewMemory(), nil)
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{Interceptors: []stateless.Interceptor{g.Interceptor()}})
	n := 0
	stateless.AddTool(srv, &stateless.Tool{Name: "add", Annotations: &stateless.ToolAnnotations{DestructiveHint: new(false)}},
		func(ctx context.Context, req *stateless.ToolRequest, in addIn) (*stateless.CallToolResult, countOut, error) {
			if in.N < 0 {
				return nil, countOut{}, mcperr.NewInvalidArguments("n must not be negative")
			}
			n += in.N
			return nil, countOut{Count: n}, nil
		})
	stateless.AddTool(srv, &stateless.Tool{Name: "whoami", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, any, error) {
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(req.Principal)}}, nil, nil
		})
	srv.AddResource(&stateless.Resource{URI: "notes://café", Name: "café", MIMEType: "text/plain"},
		func(ctx context.Context, req *stateless.ResourceRequest) (*stateless.ReadResourceResult, error) {
			return &stateless.ReadResourceResult{Contents: []stateless.ResourceContents{{URI: req.URI, Text: "au lait"}}}, nil
		})

	c := mcptest.New(t, srv)
	first := c.CallTool("add", addIn{N: 2}, mcptest.IdempotencyKey("k"))
	again := c.CallTool("add", addIn{N: 2}, mcptest.IdempotencyKey("k"))
	if first.IsError() || first.Structured()["count"] != float64(2) || first.Replayed() || !again.Replayed() || again.Structured()["count"] != float64(2) || n != 2 {
		t.Errorf("keyed: %s, then %s; ran to %d", first.Raw, again.Raw, n)
	}
	if bad := c.CallTool("add", addIn{N: -1}); !bad.IsError() || bad.Error != nil || bad.Text() == "" {
		t.Errorf("a tool failure: %s", bad.Raw)
	}
	if r := c.Call("resources/read", map[string]any{"uri": "notes://café"}); r.Error != nil || len(r.Result["contents"].([]any)) != 1 {
		t.Errorf("a resource with a non-ASCII URI: %s", r.Raw)
	}
	if r := c.CallTool("nope", nil); r.Error == nil || r.Error.Code != -32602 || r.Status != 400 {
		t.Errorf("an unknown tool: %d %s", r.Status, r.Raw)
	}
	c.Principal = "alice"
	if r := c.CallTool("whoami", nil); r.Text() != "alice" {
		t.Errorf("whoami: %s", r.Raw)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := c.CallTool("whoami", nil, mcptest.Context(ctx)); r.Raw == nil {
		t.Error("no answer under a cancelled context")
	}

}
