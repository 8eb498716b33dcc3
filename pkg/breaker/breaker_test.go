package breaker_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go"

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

// clock is a breaker's Now that moves only when told.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// serve is an instance whose tool "fetch" (with def's MaxDuration) runs
// h, which is told how many calls came before it.
func serve(t *testing.T, b *breaker.Breaker, maxDuration time.Duration, h func(ctx context.Context, n int) error) (*mcptest.Client, *atomic.Int32) {
	var calls atomic.Int32
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{
		Interceptors: []stateless.Interceptor{b.Interceptor()}, DeadlineMargin: 50 * time.Millisecond})
	stateless.AddTool(s, &stateless.Tool{Name: "fetch", MaxDuration: maxDuration, Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, any, error) {
			n := int(calls.Add(1)) - 1
			if err := h(ctx, n); err != nil {
				return nil, nil, err
			}
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("fetched")}}, nil, nil
		})
	return mcptest.New(t, s), &calls
}

func circuitOpen(a *mcptest.Answer) bool {
	return a.Error != nil && strings.Contains(string(a.Error.Data), `"type":"circuit_open"`)
}

// TestHangUpsDoNotTrip: calls whose caller hung up while the dependency
// worked — the tool answering the SDK's cancellation as RetryLater, as
// the demo did, or the context's error — never open the circuit, however
// many; a trial whose caller hung up decides nothing, and the next call
// is the trial.
func TestHangUpsDoNotTrip(t *testing.T) {
	answers := map[string]func(ctx context.Context) error{
		"retry later of the SDK's cancellation": func(ctx context.Context) error {
			return mcperr.NewRetryLater(0, fmt.Errorf("listing notes: %w", &smithy.CanceledError{Err: ctx.Err()}))
		},
		"the context's error": func(ctx context.Context) error { return ctx.Err() },
	}
	for name, answer := range answers {
		t.Run(name, func(t *testing.T) {
			clk := newClock()
			b := &breaker.Breaker{Failures: 3, Cooldown: 30 * time.Second, Now: clk.Now}
			var hangUp context.CancelFunc
			fail := false
			c, calls := serve(t, b, 0, func(ctx context.Context, n int) error {
				switch {
				case hangUp != nil:
					hangUp() // the client closes the socket while the dependency works
					<-ctx.Done()
					return answer(ctx)
				case fail:
					return mcperr.NewRetryLater(0, errors.New("upstream down"))
				}
				return nil
			})
			call := func() *mcptest.Answer {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				hangUp = cancel
				defer func() { hangUp = nil }()
				return c.CallTool("fetch", nil, mcptest.Context(ctx))
			}
			for range 6 {
				call()
			}
			if a := c.CallTool("fetch", nil); a.Text() != "fetched" || calls.Load() != 7 {
				t.Fatalf("after six hang-ups: %s (%d calls)", a.Raw, calls.Load())
			}
			// Open it, then let the cooldown pass: a trial whose caller
			// hangs up leaves the next call to be the trial.
			fail = true
			for range 3 {
				c.CallTool("fetch", nil)
			}
			if a := c.CallTool("fetch", nil); !circuitOpen(a) {
				t.Fatalf("three failures did not open the circuit: %s", a.Raw)
			}
			clk.advance(30 * time.Second)
			fail = false
			call()
			if a := c.CallTool("fetch", nil); a.Text() != "fetched" {
				t.Errorf("after a trial whose caller hung up: %s", a.Raw)
			}
		})
	}
}

// TestDeadlinesTrip: a dependency that hangs past the call's deadline
// counts against the breaker, whether its handler gives up at the
// deadline or is abandoned there: three timeouts open the circuit, and
// the fourth call does not run the handler.
func TestDeadlinesTrip(t *testing.T) {
	for _, abandoned := range []bool{false, true} {
		t.Run(fmt.Sprintf("abandoned=%v", abandoned), func(t *testing.T) {
			release := make(chan struct{})
			defer close(release)
			b := &breaker.Breaker{Failures: 3, Cooldown: 30 * time.Second, Now: newClock().Now}
			c, calls := serve(t, b, 20*time.Millisecond, func(ctx context.Context, n int) error {
				if abandoned {
					<-release // ignores its context
					return nil
				}
				<-ctx.Done()
				return ctx.Err()
			})
			for i := range 3 {
				if a := c.CallTool("fetch", nil); a.Error == nil || !strings.Contains(string(a.Error.Data), `"type":"timeout"`) {
					t.Fatalf("call %d: %s", i, a.Raw)
				}
			}
			for range 3 {
				if a := c.CallTool("fetch", nil); !circuitOpen(a) {
					t.Errorf("after three timeouts: %s", a.Raw)
				}
			}
			if n := calls.Load(); n != 3 {
				t.Errorf("the handler ran %d times, want 3", n)
			}
		})
	}
}

// TestPanicsTrip: a handler that panics counts as a failure: two panics
// in a row open the circuit.
func TestPanicsTrip(t *testing.T) {
	b := &breaker.Breaker{Failures: 2, Cooldown: 10 * time.Second, Now: newClock().Now}
	c, calls := serve(t, b, 0, func(ctx context.Context, n int) error { panic("the dependency's answer broke the tool") })
	c.CallTool("fetch", nil)
	c.CallTool("fetch", nil)
	if a := c.CallTool("fetch", nil); !circuitOpen(a) || calls.Load() != 2 {
		t.Fatalf("after two panics: %s (%d calls)", a.Raw, calls.Load())
	}
}

// TestPanickingTrial: a trial that panics is a failed trial: the circuit
// opens again for a cooldown, after which the next call is tried, and
// its success closes the circuit.
func TestPanickingTrial(t *testing.T) {
	clk := newClock()
	b := &breaker.Breaker{Failures: 1, Cooldown: 10 * time.Second, Now: clk.Now}
	c, calls := serve(t, b, 0, func(ctx context.Context, n int) error {
		switch n {
		case 0:
			return mcperr.NewRetryLater(0, errors.New("upstream down"))
		case 1:
			panic("the dependency's answer broke the tool")
		}
		return nil
	})
	c.CallTool("fetch", nil)
	clk.advance(10 * time.Second)
	if a := c.CallTool("fetch", nil); a.Error == nil || calls.Load() != 2 {
		t.Fatalf("the trial: %s (%d calls)", a.Raw, calls.Load())
	}
	if a := c.CallTool("fetch", nil); !circuitOpen(a) || a.Header.Get("Retry-After") != "10" {
		t.Errorf("after a trial that panicked: %s, Retry-After %q", a.Raw, a.Header.Get("Retry-After"))
	}
	clk.advance(10 * time.Second)
	if a := c.CallTool("fetch", nil); a.Text() != "fetched" {
		t.Errorf("the next trial: %s", a.Raw)
	}
	if a := c.CallTool("fetch", nil); a.Text() != "fetched" {
		t.Errorf("closed again: %s", a.Raw)
	}
}

// TestTrialBound: a trial that has not reported within a cooldown is
// taken for a failure: the others are refused until then (retry-after
// the rest of it), then for another cooldown, after which the next call
// is a trial of its own and its success closes the circuit. The slow
// trial's late answer changes nothing.
func TestTrialBound(t *testing.T) {
	clk := newClock()
	b := &breaker.Breaker{Failures: 1, Cooldown: 10 * time.Second, Now: clk.Now}
	fail := true
	entered, release := make(chan struct{}), make(chan struct{})
	c, calls := serve(t, b, time.Minute, func(ctx context.Context, n int) error {
		switch {
		case fail:
			return mcperr.NewRetryLater(0, errors.New("upstream down"))
		case n == 1:
			close(entered)
			<-release // the slow trial
		}
		return nil
	})
	c.CallTool("fetch", nil)
	fail = false
	clk.advance(10 * time.Second)
	done := make(chan *mcptest.Answer)
	go func() { done <- c.CallTool("fetch", nil) }()
	<-entered
	clk.advance(4 * time.Second)
	if a := c.CallTool("fetch", nil); !circuitOpen(a) || a.Header.Get("Retry-After") != "6" {
		t.Errorf("while the trial is out: %s, Retry-After %q", a.Raw, a.Header.Get("Retry-After"))
	}
	clk.advance(6 * time.Second)
	if a := c.CallTool("fetch", nil); !circuitOpen(a) || a.Header.Get("Retry-After") != "10" {
		t.Errorf("once the trial's bound passed: %s, Retry-After %q", a.Raw, a.Header.Get("Retry-After"))
	}
	clk.advance(10 * time.Second)
	if a := c.CallTool("fetch", nil); a.Text() != "fetched" || calls.Load() != 3 {
		t.Errorf("the next trial: %s (%d calls)", a.Raw, calls.Load())
	}
	close(release)
	if a := <-done; a.Text() != "fetched" {
		t.Errorf("the slow trial: %s", a.Raw)
	}
	if a := c.CallTool("fetch", nil); a.Text() != "fetched" {
		t.Errorf("closed: %s", a.Raw)
	}
}
