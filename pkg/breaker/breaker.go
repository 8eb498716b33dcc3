// Package breaker is a circuit breaker on tools' dependencies, as a
// [stateless.Interceptor]: after Failures consecutive calls of a tool
// fail in a way the error taxonomy says trips a breaker (a timeout, a
// failed upstream: errors.Error.TripsBreaker; a tool's RetryLater:
// errors.ToolError.TripsBreaker), the tool is not called for Cooldown;
// its calls are refused with a retryable CircuitOpen error whose
// retry-after is the time left. Then one call is let through: its success
// closes the circuit, its failure opens it again. The caller's mistakes
// and the server's bugs do not count.
//
// A breaker's state is its instance's: it protects a dependency from this
// instance's calls as this instance sees them, and costs nothing per call.
// Instances open and close on their own (TestInstancesApart). It is off
// unless a function adds it to [stateless.Options.Interceptors].
package breaker

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Breaker breaks the circuits of tools, one per tool.
type Breaker struct {
	// Failures is how many consecutive tripping failures open a tool's
	// circuit; 0 is 5.
	Failures int
	// Cooldown is how long an open circuit refuses calls before it lets
	// one through; 0 is 30 s.
	Cooldown time.Duration
	// Tools are the tools broken; nil is every tool.
	Tools []string
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	mu       sync.Mutex
	circuits map[string]*circuit
}

type circuit struct {
	failures  int
	openUntil time.Time // zero: closed
	trial     bool      // a call is let through while open: its answer decides
}

var errOpen = errors.New("breaker: the circuit is open")

// Interceptor returns the breaker as a tool interceptor.
func (b *Breaker) Interceptor() stateless.Interceptor {
	return stateless.Interceptor{Tool: b.wrap}
}

func (b *Breaker) wrap(tool *stateless.Tool, next stateless.ToolHandler) stateless.ToolHandler {
	if b.Tools != nil && !slices.Contains(b.Tools, tool.Name) {
		return next
	}
	name := tool.Name
	return func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		if wait, ok := b.admit(name); !ok {
			return nil, mcperr.NewRetryable(mcperr.KindCircuitOpen, wait, errOpen)
		}
		res, err := next(ctx, req)
		b.record(name, trips(err))
		return res, err
	}
}

// trips reports whether err says a dependency is failing.
func trips(err error) bool {
	var e *mcperr.Error
	var te *mcperr.ToolError
	return errors.As(err, &e) && e.TripsBreaker() || errors.As(err, &te) && te.TripsBreaker()
}

func (b *Breaker) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Breaker) circuit(name string) *circuit {
	if b.circuits == nil {
		b.circuits = map[string]*circuit{}
	}
	c := b.circuits[name]
	if c == nil {
		c = &circuit{}
		b.circuits[name] = c
	}
	return c
}

// admit reports whether a call of name may run, and if not how long
// until one may.
func (b *Breaker) admit(name string) (time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.circuit(name)
	if c.openUntil.IsZero() {
		return 0, true
	}
	now := b.now()
	if now.Before(c.openUntil) {
		return c.openUntil.Sub(now), false
	}
	if c.trial {
		// The trial call is out: the others wait for its answer.
		return b.cooldown(), false
	}
	c.trial = true
	return 0, true
}

// record counts a call's outcome.
func (b *Breaker) record(name string, failed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.circuit(name)
	wasOpen := !c.openUntil.IsZero()
	c.trial = false
	if !failed {
		c.failures, c.openUntil = 0, time.Time{}
		return
	}
	c.failures++
	limit := b.Failures
	if limit <= 0 {
		limit = 5
	}
	if wasOpen || c.failures >= limit {
		c.openUntil = b.now().Add(b.cooldown())
	}
}

func (b *Breaker) cooldown() time.Duration {
	if b.Cooldown > 0 {
		return b.Cooldown
	}
	return 30 * time.Second
}
