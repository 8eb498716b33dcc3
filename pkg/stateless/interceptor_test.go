package stateless_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

type ctxKey struct{}

// TestInterceptors: a request interceptor sees each request's method,
// target and caller, may refuse it (answered and reported as any
// refusal) or hand the handler a context; a tool interceptor, given the
// tool's definition at registration, sees and shapes each call (its
// arguments, its result, an answer in the handler's place), inside the
// call's idempotency claim; interceptors nest, the first outermost.
func TestInterceptors(t *testing.T) {
	var seen, order []string
	var reported, answers []string
	limited := map[string]bool{"mallory": true}
	g := claims.New(claims.NewMemory(), nil)
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{
		Observe: func(ctx context.Context, o *stateless.Outcome) { reported = append(reported, o.Kind) },
		Interceptors: []stateless.Interceptor{
			g.Interceptor(),
			{
				Request: func(ctx context.Context, r *stateless.InterceptedRequest, next func(context.Context) *stateless.Answer) *stateless.Answer {
					seen = append(seen, r.Method+" "+r.Target+" "+r.Call.Principal)
					if limited[r.Call.Principal] {
						return stateless.Refusal(mcperr.NewRetryable(mcperr.KindRateLimited, 2*time.Second, errors.New("over the limit")))
					}
					a := next(context.WithValue(ctx, ctxKey{}, "traced"))
					// It sees what came out: for tracing and audit.
					switch {
					case a.Refused() != nil:
						answers = append(answers, r.Method+" refused "+a.Refused().Kind().String())
					case a.Result() != nil:
						answers = append(answers, r.Method+" result")
					}
					return a
				},
				Tool: func(tool *stateless.Tool, next stateless.ToolHandler) stateless.ToolHandler {
					return func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
						order = append(order, "outer "+tool.Name)
						if strings.Contains(string(req.Arguments), "forbidden") {
							return nil, mcperr.NewForbidden("not that")
						}
						res, err := next(ctx, req)
						if err == nil && tool.ReadOnly() {
							res.Content = append(res.Content, stateless.Text("(read-only)"))
						}
						return res, err
					}
				},
			},
			{
				Tool: func(tool *stateless.Tool, next stateless.ToolHandler) stateless.ToolHandler {
					return func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
						order = append(order, "inner "+tool.Name)
						return next(ctx, req)
					}
				},
			},
		},
	})
	runs := 0
	stateless.AddTool(srv, &stateless.Tool{Name: "echo", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, in struct {
			Text string `json:"text"`
		}) (*stateless.CallToolResult, any, error) {
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(in.Text + " " + ctx.Value(ctxKey{}).(string))}}, nil, nil
		})
	stateless.AddTool(srv, &stateless.Tool{Name: "bump", Annotations: &stateless.ToolAnnotations{DestructiveHint: new(false)}},
		func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, any, error) {
			runs++
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("bumped")}}, nil, nil
		})

	alice := mcptest.New(t, srv)
	alice.Principal = "alice"
	if a := alice.CallTool("echo", map[string]any{"text": "hi"}); a.Text() != "hi traced\n(read-only)" {
		t.Errorf("echo: %s", a.Raw)
	}
	if got := strings.Join(order, ", "); got != "outer echo, inner echo" {
		t.Errorf("order %q", got)
	}
	if a := alice.CallTool("echo", map[string]any{"text": "forbidden"}); !a.IsError() || !strings.Contains(string(a.Raw), `"forbidden"`) {
		t.Errorf("an answer in the handler's place: %s", a.Raw)
	}
	// Inside the claim: the retry replays, the handler ran once.
	first := alice.CallTool("bump", nil, mcptest.IdempotencyKey("b1"))
	again := alice.CallTool("bump", nil, mcptest.IdempotencyKey("b1"))
	if runs != 1 || first.Text() != "bumped" || !again.Replayed() {
		t.Errorf("bump ran %d times: %s, then %s", runs, first.Raw, again.Raw)
	}
	mallory := mcptest.New(t, srv)
	mallory.Principal = "mallory"
	a := mallory.CallTool("echo", map[string]any{"text": "hi"})
	if a.Error == nil || !strings.Contains(string(a.Error.Data), `"rate_limited"`) || !strings.Contains(string(a.Error.Data), `"retryable":true`) {
		t.Errorf("a refused request: %s", a.Raw)
	}
	if a.Header.Get("Retry-After") != "2" {
		t.Errorf("Retry-After %q", a.Header.Get("Retry-After"))
	}
	if last := reported[len(reported)-1]; last != "rate_limited" {
		t.Errorf("the refusal was reported as %q", last)
	}
	if l := mallory.Call("tools/list", nil); l.Error == nil {
		t.Errorf("tools/list for mallory: %s", l.Raw)
	}
	if l := alice.Call("tools/list", nil); l.Error != nil {
		t.Errorf("tools/list for alice: %s", l.Raw)
	}
	if d := alice.Call("server/discover", nil); d.Error != nil {
		t.Errorf("server/discover for alice: %s", d.Raw)
	}
	wantAnswers := []string{"tools/call result", "tools/call result", "tools/call result", "tools/call result", "tools/list result", "server/discover result"}
	if strings.Join(answers, "|") != strings.Join(wantAnswers, "|") {
		t.Errorf("the request interceptor saw the answers %q, want %q", answers, wantAnswers)
	}
	want := []string{"tools/call echo alice", "tools/call echo alice", "tools/call bump alice", "tools/call bump alice", "tools/call echo mallory", "tools/list  mallory", "tools/list  alice", "server/discover  alice"}
	if strings.Join(seen, "|") != strings.Join(want, "|") {
		t.Errorf("seen %q, want %q", seen, want)
	}
}

// TestInterceptorsNest: request and execution interceptors nest, the
// first outermost, however many there are and whichever hooks each has;
// the outermost is called directly and the others through next, so
// every level must still see its inner ones' answer.
func TestInterceptorsNest(t *testing.T) {
	var trail []string
	// around records entering a level and the answer it saw leaving.
	around := func(ctx context.Context, at string, next func(context.Context) *stateless.Answer) *stateless.Answer {
		trail = append(trail, at)
		a := next(ctx)
		trail = append(trail, at+" saw "+fmt.Sprint(a.Result() != nil))
		return a
	}
	level := func(name string, request, execute bool) stateless.Interceptor {
		var ic stateless.Interceptor
		if request {
			ic.Request = func(ctx context.Context, _ *stateless.InterceptedRequest, next func(context.Context) *stateless.Answer) *stateless.Answer {
				return around(ctx, "request "+name, next)
			}
		}
		if execute {
			ic.Execute = func(ctx context.Context, _ *stateless.Execution, next func(context.Context) *stateless.Answer) *stateless.Answer {
				return around(ctx, "execute "+name, next)
			}
		}
		return ic
	}
	for _, c := range []struct {
		levels []stateless.Interceptor
		want   string
	}{
		{[]stateless.Interceptor{level("a", true, true)},
			"request a, execute a, tool, execute a saw true, request a saw true"},
		{[]stateless.Interceptor{level("a", true, true), level("b", false, false), level("c", true, false), level("d", true, true)},
			"request a, request c, request d, execute a, execute d, tool, execute d saw true, execute a saw true, request d saw true, request c saw true, request a saw true"},
	} {
		trail = nil
		srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{Interceptors: c.levels})
		srv.AddTool(&stateless.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			trail = append(trail, "tool")
			return &stateless.CallToolResult{}, nil
		})
		mcptest.New(t, srv).CallTool("t", nil)
		if got := strings.Join(trail, ", "); got != c.want {
			t.Errorf("%d levels:\n got  %s\n want %s", len(c.levels), got, c.want)
		}
	}
}
