// Package breaker is a circuit breaker on tools' dependencies, as a
// [stateless.Interceptor]: after Failures consecutive calls of a tool
// fail because something behind it is failing, the tool is not called
// for Cooldown; its calls are refused with a retryable CircuitOpen error
// whose retry-after is the time left. Then one call, the trial, is let
// through: its success closes the circuit, its failure opens it again.
//
// What counts is decided once per call, by what comes first:
//
//  1. The call's context ends. Its deadline (context.DeadlineExceeded:
//     the server's, the tool's MaxDuration or the request's less the
//     margin) is a failure: the server answers timeout whether or not the
//     handler ever returns, and one abandoned there may never report.
//     A cancellation (context.Canceled: the caller hung up, or cancelled
//     its task) is the caller's doing and counts neither way.
//  2. The handler panics: a failure.
//  3. The handler returns. Without an error: a success. With the
//     caller's cancellation ([mcperr.CallerCancelled]: the AWS SDK's
//     errors around context.Canceled too), or with any error once the
//     caller has gone: neither. With a deadline (context.DeadlineExceeded
//     in the error: the server's own timeout of a dependency) or an error
//     that says a dependency is failing ([mcperr.Error.TripsBreaker]:
//     timeout, dependency_failure; [mcperr.ToolError.TripsBreaker]:
//     RetryLater): a failure. Anything else is a success, the caller's
//     mistakes (invalid arguments, not found) among them: the dependency
//     answered.
//
// A trial has a bound of its own, one Cooldown: a trial that has not
// reported by then is taken for a failed one, and the circuit stays open
// for another Cooldown from the bound, after which the next call is a
// trial of its own. Until then the others are refused, retry-after the
// rest of the bound. A trial that reports after its bound counts as any
// call does (a success closes the circuit, a failure keeps it open
// another Cooldown); a trial that ends as the caller's frees the next
// call to be the trial.
//
// A breaker's state is its instance's: it protects a dependency from this
// instance's calls as this instance sees them, and makes no I/O of its
// own. Instances open and close on their own (TestInstancesApart). It is
// off unless a function adds it to [stateless.Options.Interceptors].
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
	// one through, and how long that trial has to report; 0 is 30 s.
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
	// trial is the ticket of the trial call out while the circuit is
	// open (0: none); trialEnd its bound. tickets numbers the trials.
	trial    uint64
	trialEnd time.Time
	tickets  uint64
}

// verdict is what one call says of the tool's dependencies.
type verdict uint8

const (
	passed  verdict = iota // the dependency answered
	failed                 // the dependency is failing
	callers                // the caller's doing: counts neither way
)

// call is one admitted call, settled once.
type call struct {
	c       *circuit
	ticket  uint64 // its trial's ticket; 0: not a trial
	settled bool
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
		k, wait, ok := b.admit(name)
		if !ok {
			return nil, mcperr.NewRetryable(mcperr.KindCircuitOpen, wait, errOpen)
		}
		// 1: the context's end settles the call if it comes first.
		stop := context.AfterFunc(ctx, func() { b.settle(k, ended(ctx)) })
		returned := false
		defer func() {
			if !returned { // 2: a panic, which goes on up
				stop()
				b.settle(k, failed)
			}
		}()
		res, err := next(ctx, req)
		returned = true
		// 3: what it returned, unless the context's end came first.
		stop()
		b.settle(k, judge(ctx, err))
		return res, err
	}
}

// ended is the verdict of a call whose context ended before it returned.
func ended(ctx context.Context) verdict {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return failed
	}
	return callers
}

// judge is the verdict of what a call returned.
func judge(ctx context.Context, err error) verdict {
	var e *mcperr.Error
	var te *mcperr.ToolError
	switch {
	case err == nil:
		return passed
	case mcperr.CallerCancelled(err) || ctx.Err() == context.Canceled:
		return callers
	case errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &e) && e.TripsBreaker(),
		errors.As(err, &te) && te.TripsBreaker():
		return failed
	}
	return passed
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

// admit decides whether a call of name may run: if so it returns the
// call, to be settled; if not, how long until one may.
func (b *Breaker) admit(name string) (*call, time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.circuit(name)
	if c.openUntil.IsZero() {
		return &call{c: c}, 0, true
	}
	now := b.now()
	if c.trial != 0 && !now.Before(c.trialEnd) {
		// The trial did not report within its bound: a failed trial.
		c.trial = 0
		c.openUntil = later(c.openUntil, c.trialEnd.Add(b.cooldown()))
	}
	switch {
	case now.Before(c.openUntil):
		return nil, c.openUntil.Sub(now), false
	case c.trial != 0:
		// The trial call is out: the others wait for its answer.
		return nil, c.trialEnd.Sub(now), false
	}
	c.tickets++
	c.trial, c.trialEnd = c.tickets, now.Add(b.cooldown())
	return &call{c: c, ticket: c.trial}, 0, true
}

// settle counts a call's verdict, once.
func (b *Breaker) settle(k *call, v verdict) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if k.settled {
		return
	}
	k.settled = true
	c := k.c
	if k.ticket != 0 && k.ticket == c.trial {
		c.trial = 0
	}
	switch v {
	case passed:
		c.failures, c.openUntil, c.trial = 0, time.Time{}, 0
	case failed:
		c.failures++
		if !c.openUntil.IsZero() || c.failures >= b.limit() {
			c.openUntil = b.now().Add(b.cooldown())
		}
	}
}

func (b *Breaker) limit() int {
	if b.Failures > 0 {
		return b.Failures
	}
	return 5
}

func (b *Breaker) cooldown() time.Duration {
	if b.Cooldown > 0 {
		return b.Cooldown
	}
	return 30 * time.Second
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
