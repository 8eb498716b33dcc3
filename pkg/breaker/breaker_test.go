package breaker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/breaker"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// upstream is a tool's dependency, failing as it is told.
type upstream struct {
	fail  error
	calls int
}

func instance(t *testing.T, b *breaker.Breaker, up *upstream) *mcptest.Client {
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{Interceptors: []stateless.Interceptor{b.Interceptor()}})
	stateless.AddTool(s, &stateless.Tool{Name: "fetch", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, any, error) {
			up.calls++
			if up.fail != nil {
				return nil, nil, up.fail
			}
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("fetched")}}, nil, nil
		})
	return mcptest.New(t, s)
}

// TestBreaker: three tripping failures in a row open the tool's circuit:
// its calls are refused circuit_open, retryable after the rest of the
// cooldown, without reaching the upstream; after the cooldown one call is
// let through, and its success closes the circuit. The caller's mistakes
// do not count, and a success resets the count.
func TestBreaker(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	b := &breaker.Breaker{Failures: 3, Cooldown: 10 * time.Second, Now: func() time.Time { return now }}
	up := &upstream{}
	c := instance(t, b, up)

	up.fail = mcperr.NewInvalidArguments("bad")
	for range 5 {
		c.CallTool("fetch", nil)
	}
	up.fail = mcperr.NewRetryLater(0, errors.New("upstream down"))
	c.CallTool("fetch", nil)
	c.CallTool("fetch", nil)
	up.fail = nil
	c.CallTool("fetch", nil) // a success: the count starts again
	up.fail = mcperr.NewRetryable(mcperr.KindDependencyFailure, 0, errors.New("upstream down"))
	for range 3 {
		c.CallTool("fetch", nil)
	}
	calls := up.calls
	a := c.CallTool("fetch", nil)
	if up.calls != calls || a.Error == nil || !strings.Contains(string(a.Error.Data), `"type":"circuit_open"`) ||
		!strings.Contains(string(a.Error.Data), `"retryable":true`) || a.Header.Get("Retry-After") != "10" {
		t.Fatalf("open: %d upstream calls (want %d), %s, Retry-After %q", up.calls, calls, a.Raw, a.Header.Get("Retry-After"))
	}
	now = now.Add(4 * time.Second)
	if a := c.CallTool("fetch", nil); a.Header.Get("Retry-After") != "6" {
		t.Errorf("still open: %s, Retry-After %q", a.Raw, a.Header.Get("Retry-After"))
	}
	// After the cooldown a trial that fails opens it again.
	now = now.Add(6 * time.Second)
	c.CallTool("fetch", nil)
	if up.calls != calls+1 {
		t.Errorf("the trial: %d upstream calls, want %d", up.calls, calls+1)
	}
	if a := c.CallTool("fetch", nil); a.Error == nil || !strings.Contains(string(a.Error.Data), "circuit_open") {
		t.Errorf("after a failed trial: %s", a.Raw)
	}
	// A trial that succeeds closes it.
	now = now.Add(10 * time.Second)
	up.fail = nil
	if a := c.CallTool("fetch", nil); a.Text() != "fetched" {
		t.Errorf("the trial: %s", a.Raw)
	}
	if a := c.CallTool("fetch", nil); a.Text() != "fetched" {
		t.Errorf("closed: %s", a.Raw)
	}
}

// TestInstancesApart: each instance's breaker is its own: one that has
// seen the failures is open while another, which has not, still calls.
func TestInstancesApart(t *testing.T) {
	up := &upstream{fail: mcperr.NewRetryLater(0, errors.New("down"))}
	one := instance(t, &breaker.Breaker{Failures: 2}, up)
	other := instance(t, &breaker.Breaker{Failures: 2}, up)
	one.CallTool("fetch", nil)
	one.CallTool("fetch", nil)
	if a := one.CallTool("fetch", nil); a.Error == nil {
		t.Errorf("the first instance is not open: %s", a.Raw)
	}
	before := up.calls
	if other.CallTool("fetch", nil); up.calls != before+1 {
		t.Error("the second instance did not call")
	}
}
