package stateless

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// toolRun is what a tool handler returned, or how it panicked.
type toolRun struct {
	res   *CallToolResult
	err   error
	panic *Panic
	call  Call
	// late is set when an Inline handler returned past its deadline (and
	// the grace runTool allows): a fault of the server's, answered as it
	// returned.
	late error
}

// The states of a handler's run: running until it returns or is
// abandoned at its deadline, whichever comes first (a compare-and-swap
// decides).
const (
	runRunning int32 = iota
	runReturned
	runAbandoned
)

// runTool runs h, t's handler or what stands for it, for call, in its
// own goroutine (an Inline tool's on the calling one: runInline) and
// waits for it until ctx, the handler's context, is done (and a short
// grace after). It reports false when the handler has not returned by
// then: the handler is abandoned, its eventual result discarded, and it
// is counted in the server's overdue handlers until it returns. The
// handler works on a copy of call, written back when it returns in time,
// so that one left running cannot touch the answered request. An Inline
// handler's run is kept in inline when it is set (the request's running
// part), else in an allocation of its own.
func runTool(ctx context.Context, s *Server, t *registeredTool, call *Call, args json.RawMessage, h ToolHandler, inline *toolRun) (toolRun, bool) {
	if t.def.Inline {
		return runInline(ctx, s, t, call, args, h, inline), true
	}
	// One allocation holds the handler's copy of the Call and what it
	// returns; done only signals. The exchange reads run after done, or
	// never (abandoned).
	type shared struct {
		run   toolRun
		state atomic.Int32
		done  chan struct{}
	}
	sh := &shared{run: toolRun{call: *call}, done: make(chan struct{}, 1)}
	go func() {
		defer func() {
			if !sh.state.CompareAndSwap(runRunning, runReturned) {
				s.overdue.Add(-1)
				return
			}
			sh.done <- struct{}{}
		}()
		sh.run.runHandler(ctx, t, args, h)
	}()
	select {
	case <-sh.done:
		*call = sh.run.call
		return sh.run, true
	case <-ctx.Done():
	}
	// A handler that honours its context returns now: give it a fifth of
	// the margin to be answered as it returned.
	grace := time.NewTimer(s.opts.DeadlineMargin / 5)
	defer grace.Stop()
	select {
	case <-sh.done:
		*call = sh.run.call
		return sh.run, true
	case <-grace.C:
	}
	s.overdue.Add(1)
	if sh.state.CompareAndSwap(runRunning, runAbandoned) {
		return toolRun{}, false
	}
	// It returned at the deadline: its answer stands.
	s.overdue.Add(-1)
	<-sh.done
	*call = sh.run.call
	return sh.run, true
}

// runHandler runs h for r (on r.call, the handler's copy of the Call), a
// panic recorded as r's.
func (r *toolRun) runHandler(ctx context.Context, t *registeredTool, args json.RawMessage, h ToolHandler) {
	defer func() {
		if p := recover(); p != nil {
			r.panic = &Panic{Value: p, Stack: debug.Stack()}
		}
	}()
	r.res, r.err = h(ctx, &ToolRequest{Call: &r.call, Name: t.def.Name, Arguments: args})
}

// watchdog answers a tools/call in its handler's place when the
// handler, run on the request's goroutine (runWatched), is still running
// a fifth of the margin after its deadline. It costs the call a timer
// and no goroutine unless it fires.
type watchdog struct {
	// state is the run's (runRunning, runReturned, runAbandoned).
	state atomic.Int32
	// delivered is closed once the watchdog has answered: the request's
	// goroutine, back from its handler, waits for it before it touches
	// the exchange again.
	delivered chan struct{}

	x        *exchange
	ctx      context.Context // the request's
	t        *registeredTool
	deadline time.Time // the handler's
	start    time.Time // when the handler started
}

// runWatched runs h, t's handler or what stands for it, on the request's
// goroutine, under hctx, the handler's context, ending at deadline, with
// a watchdog that answers the call with a retryable Timeout — onto the
// request's stream (an Ender), or through HandleEarly's early — should
// the handler still be running a fifth of the margin after its deadline.
// It reports false when the watchdog did: the handler's result is
// discarded, and the request's goroutine, once the handler returns, goes
// on through the pipeline as for any abandoned handler, but answers
// nothing more (answerEarly). The handler works on a copy of the Call,
// written back when it returns in time.
func (x *exchange) runWatched(ctx, hctx context.Context, t *registeredTool, args json.RawMessage, h ToolHandler, deadline, start time.Time) (toolRun, bool) {
	rs := x.runs()
	w := &rs.watch
	w.x, w.ctx, w.t, w.deadline, w.start = x, ctx, t, deadline, start
	timer := time.AfterFunc(time.Until(deadline)+x.s.opts.DeadlineMargin/5, w.fire)
	run := &rs.tool
	*run = toolRun{call: x.call}
	run.runHandler(hctx, t, args, h)
	if timer.Stop() || w.state.CompareAndSwap(runRunning, runReturned) {
		x.call = run.call
		return *run, true
	}
	<-w.delivered
	x.s.overdue.Add(-1)
	// The request's Outcome was reported (Options.Observe may keep it):
	// what the pipeline still records of the request, on its way back,
	// goes to one of its own.
	x.o = &Outcome{}
	return toolRun{}, false
}

// fire is the watchdog's timer's: it abandons the handler, unless it has
// returned, and answers the call.
func (w *watchdog) fire() {
	// Made before the compare-and-swap that publishes it.
	w.delivered = make(chan struct{})
	if !w.state.CompareAndSwap(runRunning, runAbandoned) {
		return
	}
	x := w.x
	defer func() {
		// No request's goroutine is below this one to recover a panic:
		// it is logged, and the request's, once its handler returns,
		// answers what is left to answer.
		if p := recover(); p != nil {
			x.s.log.LogAttrs(w.ctx, slog.LevelError, "stateless: answering an overrun tool's call panicked",
				slogString("panic_type", fmt.Sprintf("%T", p)), slogString("stack", string(debug.Stack())))
		}
		close(w.delivered)
	}()
	x.s.overdue.Add(1)
	x.o.Steps.Handler = time.Since(w.start)
	x.answerEarly(w.ctx, x.leftRunning(w.ctx, w.t, w.deadline))
}

// overran is a, the answer to r, marked a fault of the server's when r's
// Inline handler returned past its deadline (late).
func (r *toolRun) overran(a Answer) Answer {
	if r.late != nil {
		a.fault = true
		if a.cause == nil {
			a.cause = r.late
		}
	}
	return a
}

// maxDuration is the longest t runs (Tool.MaxDuration).
func (t *Tool) maxDuration() time.Duration {
	if t.MaxDuration > 0 {
		return t.MaxDuration
	}
	return DefaultMaxDuration
}

// runInline runs h, t's handler or what stands for it, on the calling
// goroutine (Tool.Inline). A handler that returns after its deadline (and
// the fifth of the margin runTool waits) is answered as it returned, and
// its run records the overrun (late), a fault.
func runInline(ctx context.Context, s *Server, t *registeredTool, call *Call, args json.RawMessage, h ToolHandler, run *toolRun) toolRun {
	if run == nil {
		run = new(toolRun)
	}
	*run = toolRun{call: *call}
	run.runHandler(ctx, t, args, h)
	*call = run.call
	if end, ok := ctx.Deadline(); ok {
		if late := time.Since(end); late > s.opts.DeadlineMargin/5 {
			run.late = fmt.Errorf("inline tool %s returned %v after its deadline", t.def.Name, late.Round(time.Millisecond))
		}
	}
	return *run
}

// maxFinish bounds the time spent recording a call's outcome.
const maxFinish = 10 * time.Second

// finishContext is the context in which a call's claim and state are
// settled: not cancelled with the request (the result exists and must be
// recorded, or the claim freed), and ending a fifth of the DeadlineMargin
// before the request's deadline — the invocation's, on Lambda — so that
// the answer still leaves in time, and at most maxFinish from now. An
// Inline handler that returned after that point is answered late anyway:
// its result gets maxFinish to be recorded, so that a keyed retry replays
// it rather than running the tool again.
func (x *exchange) finishContext(ctx context.Context) (context.Context, context.CancelFunc) {
	now := time.Now()
	end := now.Add(maxFinish)
	if d := x.deadline.Add(-x.s.opts.DeadlineMargin / 5); d.Before(end) && d.After(now) {
		end = d
	}
	return context.WithDeadline(context.WithoutCancel(ctx), end)
}
