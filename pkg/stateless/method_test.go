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
		Request: func(ctx context.Context, r *stateless.InterceptedRequest) (context.Context, *mcperr.Error) {
			seen = append(seen, r.Method+" "+r.Call.Principal)
			return ctx, nil
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
