package observe_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// TestAbandonedToolIsAFault: a tool that ignores its context past the
// invocation's deadline is answered before the deadline with an in-band
// Timeout (not a gateway 502), and the request line logs it as a server
// fault at ERROR.
func TestAbandonedToolIsAFault(t *testing.T) {
	var buf logBuffer
	ob := observe.New(&buf, observe.Options{Namespace: "test", Function: "fn"})
	g := claims.New(claims.NewMemory(), nil)
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Interceptors: []stateless.Interceptor{g.Interceptor()}, Observe: ob.Observe})
	release := make(chan struct{})
	defer close(release)
	stateless.AddTool(srv, &stateless.Tool{Name: "stubborn"}, func(ctx context.Context, r *stateless.ToolRequest, in textIn) (*stateless.CallToolResult, struct{}, error) {
		select {
		case <-release:
		case <-time.After(3 * time.Second):
		}
		return nil, struct{}{}, nil
	})
	start := time.Now()
	out := invoke(t, &apigw.Handler{Server: srv}, event("tools/call", "stubborn", `"name":"stubborn","arguments":{"text":"`+secret+`"},"idempotencyKey":"k1"`, nil), time.Second)
	if e := time.Since(start); e >= time.Second {
		t.Errorf("answered after %v, past the 1s deadline", e)
	}
	var resp struct {
		StatusCode int
		Body       string
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.Contains(resp.Body, `"type":"timeout"`) || !strings.Contains(resp.Body, `"retryable":true`) {
		t.Errorf("answer %d %s", resp.StatusCode, resp.Body)
	}
	lines := buf.lines(t)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1: %v", len(lines), lines)
	}
	l := lines[0]
	if l["level"] != "ERROR" || l["fault"] != true || l["Outcome"] != "timeout" || l["ClaimOutcome"] != "new" {
		t.Errorf("the request line: %v", l)
	}
	if b, _ := json.Marshal(l); strings.Contains(string(b), secret) {
		t.Error("argument text in the log")
	}
}
