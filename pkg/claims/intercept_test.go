package claims_test

import (
	"context"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestInterceptorReleasesOnPanic: a prompt whose second round panics
// (the panic passes through the interceptor, which the server answers as
// an internal error) gives its single-use state back, so that the retry
// that carries it is served, once; the retry after that is refused as a
// spent state.
func TestInterceptorReleasesOnPanic(t *testing.T) {
	g := claims.New(claims.NewMemory(), nil)
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"},
		&stateless.Options{Interceptors: []stateless.Interceptor{g.Interceptor()}})
	panics := true
	srv.AddPrompt(&stateless.Prompt{Name: "confirm"}, func(ctx context.Context, req *stateless.PromptRequest) (*stateless.GetPromptResult, error) {
		if _, ok := req.State(); !ok {
			return nil, &stateless.InputRequired{State: []byte("asked"), SingleUse: true,
				Requests: map[string]stateless.InputRequest{"ok": stateless.ElicitForm("Sure?", map[string]any{"type": "object", "properties": map[string]any{}})}}
		}
		if panics {
			panics = false
			panic("the template store panicked")
		}
		return &stateless.GetPromptResult{Messages: []stateless.PromptMessage{{Role: "user", Content: stateless.Text("confirmed")}}}, nil
	})
	c := mcptest.New(t, srv)
	c.Capabilities = map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	first := c.Call("prompts/get", map[string]any{"name": "confirm"})
	state, _ := first.Result["requestState"].(string)
	if state == "" {
		t.Fatalf("first round: %s", first.Raw)
	}
	retry := map[string]any{"name": "confirm", "requestState": state,
		"inputResponses": map[string]any{"ok": map[string]any{"action": "accept", "content": map[string]any{}}}}
	if a := c.Call("prompts/get", retry); a.Error == nil || a.Error.Code != -32603 {
		t.Fatalf("panicking round: %s", a.Raw)
	}
	if a := c.Call("prompts/get", retry); a.Error != nil {
		t.Fatalf("the retry after the panic was refused, the state not released: %s", a.Raw)
	}
	if a := c.Call("prompts/get", retry); a.Error == nil || a.Error.Code != -32602 {
		t.Fatalf("a spent state was served again: %s", a.Raw)
	}
}
