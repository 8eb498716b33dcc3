package endpoint_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestDefaultQuotas: an endpoint composed with nothing configured bounds
// what one caller can make it do — the reproductions of the quotas'
// issue, each of which the endpoint let through before quotas were on by
// default. One principal starts at most 10 live tasks (it started 1,500),
// and makes at most 600 calls a minute; past either it is refused
// rate_limited, retryably, while another principal is served, and
// discovery, the lists and its own task's tasks/get are never refused
// for it. Anonymous callers are charged by address, not all together.
func TestDefaultQuotas(t *testing.T) {
	cfg, err := endpoint.LoadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ep, err := endpoint.New(cfg, endpoint.Options{Implementation: stateless.Implementation{Name: "t", Version: "1"}, Stdout: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	defer close(hold)
	stateless.AddTool(ep.Server, &stateless.Tool{Name: "export", TaskSupport: stateless.TaskSupportRequired, Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
			select {
			case <-hold:
			case <-ctx.Done():
			}
			return nil, struct{}{}, nil
		})
	stateless.AddTool(ep.Server, &stateless.Tool{Name: "ping", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, struct{}, error) {
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("pong")}}, struct{}{}, nil
		})
	limited := func(a *mcptest.Answer) bool {
		return a.Error != nil && strings.Contains(string(a.Error.Data), `"type":"rate_limited"`) && strings.Contains(string(a.Error.Data), `"retryable":true`)
	}
	tasksCaps := map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}

	mallory := mcptest.New(t, ep.Server)
	mallory.Principal, mallory.Capabilities = "jwt:https://issuer.example.com#mallory", tasksCaps
	var first string
	started := 0
	for i := range 40 {
		a := mallory.CallTool("export", nil)
		if limited(a) {
			continue
		}
		if a.Error != nil {
			t.Fatalf("task %d: %s", i, a.Raw)
		}
		if first == "" {
			first = fmt.Sprint(a.Result["taskId"])
		}
		started++
	}
	if started != endpoint.DefaultQuotas.LiveTasks {
		t.Fatalf("one principal started %d live tasks, want %d", started, endpoint.DefaultQuotas.LiveTasks)
	}
	// 40 calls so far; the rest of the 600 are served, then refused.
	served := 0
	for range 700 {
		if a := mallory.CallTool("ping", nil); a.Error == nil {
			served++
		} else if !limited(a) {
			t.Fatalf("a refusal of another kind: %s", a.Raw)
		}
	}
	if served != 560 {
		t.Fatalf("%d more calls served in the window, want 560", served)
	}
	for _, m := range []string{"server/discover", "tools/list"} {
		if a := mallory.Call(m, nil); a.Error != nil {
			t.Errorf("%s refused for the calls quota: %s", m, a.Raw)
		}
	}
	// Past both quotas, its own task is still polled and cancelled.
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/get"} {
		if a := mallory.Call(m, map[string]any{"taskId": first}); a.Error != nil {
			t.Fatalf("%s past the quotas: %s", m, a.Raw)
		}
	}
	alice := mcptest.New(t, ep.Server)
	alice.Principal, alice.Capabilities = "jwt:https://issuer.example.com#alice", tasksCaps
	if a := alice.CallTool("ping", nil); a.Error != nil {
		t.Fatalf("another principal refused for mallory's calls: %s", a.Raw)
	}
	if a := alice.CallTool("export", nil); a.Error != nil {
		t.Fatalf("another principal refused for mallory's tasks: %s", a.Raw)
	}

	// Anonymous callers, apart by address.
	for i := range 601 {
		anon := mcptest.New(t, ep.Server)
		anon.Address = "198.51.100.7"
		if a := anon.CallTool("ping", nil); a.Error != nil && i < 600 {
			t.Fatalf("anonymous call %d: %s", i, a.Raw)
		}
	}
	other := mcptest.New(t, ep.Server)
	other.Address = "198.51.100.8"
	if a := other.CallTool("ping", nil); a.Error != nil {
		t.Fatalf("an anonymous caller refused for another address's calls: %s", a.Raw)
	}
}
