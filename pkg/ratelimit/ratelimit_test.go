package ratelimit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/ratelimit"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// limitedServer is a server with one tool behind l.
func limitedServer(l *ratelimit.Limiter) *stateless.Server {
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{Interceptors: []stateless.Interceptor{l.Interceptor()}})
	stateless.AddTool(s, &stateless.Tool{Name: "ping", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, any, error) {
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("pong")}}, nil, nil
		})
	return s
}

type downCounter struct{}

func (downCounter) Increment(context.Context, string, time.Time) (int64, error) {
	return 0, errors.New("table unreachable")
}

// TestLimiter: a principal's requests past Limit in a window are refused
// RateLimited, retryable after the rest of the window; the next window
// admits again; principals are counted apart; only the methods named are
// counted; a counter that cannot be reached fails the request closed,
// retryably.
func TestLimiter(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 12, 0, time.UTC)
	l := &ratelimit.Limiter{Counter: &ratelimit.Memory{}, Limit: 3, Window: time.Minute, Methods: []string{"tools/call"}, Now: func() time.Time { return now }}
	srv := limitedServer(l)
	alice := mcptest.New(t, srv)
	alice.Principal = "alice"
	for i := range 3 {
		if a := alice.CallTool("ping", nil); a.Text() != "pong" {
			t.Fatalf("call %d: %s", i, a.Raw)
		}
	}
	a := alice.CallTool("ping", nil)
	if a.Error == nil || !strings.Contains(string(a.Error.Data), `"type":"rate_limited"`) || !strings.Contains(string(a.Error.Data), `"retryable":true`) ||
		!strings.Contains(string(a.Error.Data), `"retryAfterMs":48000`) || a.Header.Get("Retry-After") != "48" {
		t.Errorf("over the limit: %s, Retry-After %q", a.Raw, a.Header.Get("Retry-After"))
	}
	if l := alice.Call("tools/list", nil); l.Error != nil {
		t.Errorf("a method not limited: %s", l.Raw)
	}
	bob := mcptest.New(t, srv)
	bob.Principal = "bob"
	if a := bob.CallTool("ping", nil); a.Text() != "pong" {
		t.Errorf("another principal: %s", a.Raw)
	}
	now = now.Add(time.Minute)
	if a := alice.CallTool("ping", nil); a.Text() != "pong" {
		t.Errorf("the next window: %s", a.Raw)
	}

	down := mcptest.New(t, limitedServer(&ratelimit.Limiter{Counter: downCounter{}, Limit: 3, Window: time.Minute}))
	if a := down.CallTool("ping", nil); a.Error == nil || !strings.Contains(string(a.Error.Data), `"dependency_failure"`) || !strings.Contains(string(a.Error.Data), `"retryable":true`) {
		t.Errorf("the counter down: %s", a.Raw)
	}
}

// TestKey: a key names no principal and is bounded, whatever the
// principal.
func TestKey(t *testing.T) {
	start := time.Unix(1764669600, 0)
	k := ratelimit.Key("jwt:https://issuer.example.com#"+strings.Repeat("x", 5000), start)
	if len(k) > 64 || strings.Contains(k, "issuer") || !strings.HasSuffix(k, "#1764669600") {
		t.Errorf("key %q", k)
	}
	if ratelimit.Key("a", start) == ratelimit.Key("b", start) || ratelimit.Key("a", start) == ratelimit.Key("a", start.Add(time.Minute)) {
		t.Error("keys collide")
	}
}
