package stateless_test

import (
	"context"
	"strings"
	"testing"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

type forecastIn struct {
	City string `json:"city"`
}

type forecastOut struct {
	City  string  `json:"city"`
	TempC float64 `json:"tempC"`
}

// TestAddMethod: a server's own method is served as the protocol's are:
// its params decoded into its type, its result decorated for the era, the
// interceptors run for it, its refusals answered as refusals; another
// server does not have it; the protocol's names cannot be taken.
func TestAddMethod(t *testing.T) {
	var seen []string
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{Interceptors: []stateless.Interceptor{{
		Request: func(ctx context.Context, r *stateless.InterceptedRequest, next func(context.Context) *stateless.Answer) *stateless.Answer {
			seen = append(seen, r.Method+" "+r.Call.Principal)
			return next(ctx)
		}}}})
	stateless.AddMethod(srv, "io.example.weather/forecast", func(ctx context.Context, req *stateless.MethodRequest, in forecastIn) (forecastOut, error) {
		switch in.City {
		case "":
			return forecastOut{}, mcperr.Wrap(mcperr.KindMalformedParams, nil)
		case "busy":
			return forecastOut{}, mcperr.NewRetryable(mcperr.KindRateLimited, time.Second, nil)
		}
		return forecastOut{City: in.City, TempC: 21.5}, nil
	}, nil)
	c := mcptest.New(t, srv)
	c.Principal = "alice"
	a := c.Call("io.example.weather/forecast", map[string]any{"city": "Lyon"})
	if a.Error != nil || a.Result["city"] != "Lyon" || a.Result["tempC"] != 21.5 || a.Result["resultType"] != "complete" {
		t.Errorf("forecast: %s", a.Raw)
	}
	if a := c.Call("io.example.weather/forecast", map[string]any{"city": 5}); a.Error == nil || a.Error.Code != -32602 {
		t.Errorf("params of the wrong type: %s", a.Raw)
	}
	if a := c.Call("io.example.weather/forecast", map[string]any{"city": "busy"}); a.Error == nil || !strings.Contains(string(a.Error.Data), "rate_limited") {
		t.Errorf("a refusal: %s", a.Raw)
	}
	if strings.Join(seen, "|") != "io.example.weather/forecast alice|io.example.weather/forecast alice|io.example.weather/forecast alice" {
		t.Errorf("the interceptor saw %q", seen)
	}
	other := mcptest.New(t, stateless.NewServer(stateless.Implementation{Name: "u", Version: "1"}, nil))
	if a := other.Call("io.example.weather/forecast", map[string]any{"city": "Lyon"}); a.Error == nil || a.Error.Code != -32601 {
		t.Errorf("another server: %s", a.Raw)
	}
	for _, name := range []string{"tools/call", "", "notifications/x", "subscriptions/listen", "io.example.weather/forecast"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("AddMethod(%q) did not panic", name)
				}
			}()
			stateless.AddMethod(srv, name, func(context.Context, *stateless.MethodRequest, struct{}) (struct{}, error) { return struct{}{}, nil }, nil)
		}()
	}
}

// TestAddMethodTarget: a method of the server's own that names its target
// has Mcp-Name checked against that params member, as tools/call's name
// is: equal passes; another value, or a member that is no string, is
// refused before the handler runs; and the extension it is of is
// advertised in server/discover once it is registered.
func TestAddMethodTarget(t *testing.T) {
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, nil)
	c := mcptest.New(t, srv)
	discover := func() map[string]any {
		caps, _ := c.Call("server/discover", nil).Result["capabilities"].(map[string]any)
		ext, _ := caps["extensions"].(map[string]any)
		return ext
	}
	if _, ok := discover()["io.example.books"]; ok {
		t.Fatal("an extension advertised before any of its methods")
	}
	ran := 0
	stateless.AddMethod(srv, "io.example.books/get", func(ctx context.Context, req *stateless.MethodRequest, p struct {
		ISBN string `json:"isbn"`
	}) (map[string]string, error) {
		ran++
		return map[string]string{"isbn": p.ISBN}, nil
	}, &stateless.MethodOptions{Target: "isbn", Extension: "io.example.books"})
	if _, ok := discover()["io.example.books"]; !ok {
		t.Fatal("the extension is not advertised")
	}
	call := func(params map[string]any, name string) *mcptest.Answer {
		return c.Call("io.example.books/get", params, mcptest.Header("Mcp-Name", name))
	}
	if a := call(map[string]any{"isbn": "978-0"}, "978-0"); a.Error != nil || a.Result["isbn"] != "978-0" {
		t.Errorf("matching Mcp-Name: %s", a.Raw)
	}
	if a := call(map[string]any{"isbn": "978-0"}, "978-1"); a.Status != 400 || a.Error == nil || a.Error.Code != -32020 {
		t.Errorf("another Mcp-Name: %d %s", a.Status, a.Raw)
	}
	if a := call(map[string]any{"isbn": 978}, "978"); a.Error == nil || a.Error.Code != -32602 {
		t.Errorf("a target that is no string: %s", a.Raw)
	}
	if a := c.Call("io.example.books/get", map[string]any{"isbn": "978-0"}); a.Status != 400 || a.Error == nil || a.Error.Code != -32020 {
		t.Errorf("no Mcp-Name on a 2026-07-28 request: %d %s", a.Status, a.Raw)
	}
	if ran != 1 {
		t.Errorf("the handler ran %d times, want 1", ran)
	}
}

// TestExecuteInterceptor: an execution interceptor sees each tools/call
// that passed the server's checks (never one refused before), may answer
// in the handler's place with a refusal, and sees what the handler
// answered, as a replay would send it.
func TestExecuteInterceptor(t *testing.T) {
	var seen []string
	var results []string
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{Interceptors: []stateless.Interceptor{{
		Execute: func(ctx context.Context, e *stateless.Execution, next func(context.Context) *stateless.Answer) *stateless.Answer {
			seen = append(seen, e.Method+" "+e.Target+" "+string(e.Arguments))
			if strings.Contains(string(e.Arguments), "quota") {
				return stateless.Refusal(mcperr.NewRetryable(mcperr.KindRateLimited, 3*time.Second, nil))
			}
			a := next(ctx)
			results = append(results, string(a.Result()))
			return a
		}}}})
	ran := 0
	stateless.AddTool(srv, &stateless.Tool{Name: "echo", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, in forecastIn) (*stateless.CallToolResult, forecastOut, error) {
			ran++
			return nil, forecastOut{City: in.City}, nil
		})
	c := mcptest.New(t, srv)
	if a := c.CallTool("echo", map[string]any{"city": "Lyon"}); a.IsError() {
		t.Fatalf("echo: %s", a.Raw)
	}
	if a := c.CallTool("echo", map[string]any{"city": "quota"}); a.Error == nil || a.Header.Get("Retry-After") != "3" {
		t.Errorf("the interceptor's refusal: %d %s", a.Status, a.Raw)
	}
	if a := c.CallTool("echo", map[string]any{"city": 5}); !a.IsError() {
		t.Errorf("arguments against the schema: %s", a.Raw)
	}
	if a := c.CallTool("nope", nil); a.Error == nil {
		t.Errorf("an unknown tool: %s", a.Raw)
	}
	if ran != 1 || len(seen) != 2 || seen[0] != `tools/call echo {"city":"Lyon"}` {
		t.Errorf("ran %d, the interceptor saw %q", ran, seen)
	}
	if len(results) != 1 || !strings.Contains(results[0], `"structuredContent":{"city":"Lyon","tempC":0}`) || !strings.Contains(results[0], stateless.MetaReplay) {
		t.Errorf("the answers it saw: %q", results)
	}
}
