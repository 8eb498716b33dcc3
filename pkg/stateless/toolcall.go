package stateless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// serveCallTool answers tools/call, in the architecture's order: the
// tool (hidden answers as absent), its Mcp-Param-* headers, scopes,
// whether it becomes a task, the arguments' shape, the idempotency key,
// then the prelude every handler runs after (execute: the input
// responses, the request state), the arguments against the schema, and,
// inside the execution interceptors (package claims's claim and
// redemption), the handler under its own deadline.
func (x *exchange) serveCallTool(ctx context.Context, p *callToolParams) Answer {

	if p.Name == nil {
		return refused(mcperr.New(mcperr.KindMalformedParams))
	}
	name := *p.Name
	t := x.reg.tool(name)
	if t == nil || (t.def.Visible != nil && !t.def.Visible(ctx, x.call.Principal)) {
		return refused(mcperr.NewUnknownTool(suggest(name, x.visibleToolNames(ctx))))
	}
	x.o.Target = t.def.Name
	if err := t.prepare(); err != nil {
		return refused(mcperr.Wrap(mcperr.KindInternal, err))
	}
	if !checkParamHeaders(x.r.Header, t.params, p.Arguments, !x.legacy) {
		return refused(mcperr.Wrap(mcperr.KindHeaderMismatch, errParamHeader))
	}
	if e := x.checkScopes(t); e != nil {
		return refused(e)
	}
	asTask, e := runsAsTask(x, t)
	if e != nil {
		return refused(e)
	}
	args := bytes.TrimSpace(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	} else if args[0] != '{' {
		return refused(mcperr.Wrap(mcperr.KindMalformedParams, errors.New("arguments is not an object")))
	}
	// An unusable key is refused whether or not the tool takes claims:
	// dropping it would run a side-effecting call unclaimed.
	key, e := idempotencyKey(json.RawMessage(p.IdempotencyKey), x.r.Header)
	if e != nil {
		return refused(e)
	}
	x.call.IdempotencyKey = key
	return x.execute(ctx, executable{callOrigin: callOrigin{method: "tools/call", target: t.def.Name}, stateArgs: args, round: &p.roundTrip,
		tool: t, key: key, args: args, task: asTask})
}

// toolReady makes the last checks of a tools/call once its state is
// open — its arguments against the tool's schema, time left to run it, a
// bound on the handlers left running — and returns the handler's
// deadline: the earlier of the tool's MaxDuration and the request's
// deadline less the margin, by which the call is answered whether the
// handler has returned or not.
func (x *exchange) toolReady(t *registeredTool, args json.RawMessage) (time.Time, *Answer) {
	if err := t.input.validate(args); err != nil {
		a := x.toolFailure(mcperr.NewInvalidArguments(err.Error()))
		return time.Time{}, &a
	}
	now := time.Now()
	deadline := now.Add(t.def.maxDuration())
	if rd := x.deadline.Add(-x.s.opts.DeadlineMargin); rd.Before(deadline) {
		deadline = rd
	}
	if !deadline.After(now) {
		a := refused(tooLong(x.s, t, mcperr.NewRetryable(mcperr.KindTimeout, time.Second, errors.New("no time left to run the tool before the request's deadline"))))
		return time.Time{}, &a
	}
	if n := x.s.overdue.Load(); int(n) >= x.s.opts.MaxOverdue {
		a := refused(mcperr.NewRetryable(mcperr.KindTimeout, time.Second, fmt.Errorf("%d tool handlers are still running past their deadline", n)))
		return time.Time{}, &a
	}
	return deadline, nil
}

// runCall runs a tool's handler under its deadline and answers what it
// returned: its result, the task it is to become, or a refusal when it
// panicked or overran.
func (x *exchange) runCall(ctx context.Context, t *registeredTool, k stateKey, args json.RawMessage, deadline time.Time, asTask bool) Answer {
	handlerStart := time.Now()
	hctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	h := t.handler
	if asTask {
		// The request's part of a task: BeforeTask's input rounds, then
		// the task's creation.
		h = beforeTask(t)
	}
	var r toolRun
	var returned bool
	if (x.out != nil && x.out.ends || x.deliverEarly != nil) && !t.def.Inline {
		// The answer can leave without the request's goroutine: the
		// handler runs on it, watched.
		r, returned = x.runWatched(ctx, hctx, t, args, h, deadline, handlerStart)
	} else {
		r, returned = runTool(hctx, x.s, t, &x.call, args, h, &x.runs().tool)
	}
	x.o.Steps.Handler = time.Since(handlerStart)
	return r.overran(x.ranCall(ctx, hctx, t, k, deadline, asTask, &r, returned))
}

// ranCall is the answer to a tool's handler that ran under hctx (or was
// left running: !returned).
func (x *exchange) ranCall(ctx, hctx context.Context, t *registeredTool, k stateKey, deadline time.Time, asTask bool, r *toolRun, returned bool) Answer {
	if !returned {
		return x.leftRunning(ctx, t, deadline)
	}
	if r.panic != nil {
		return panicked(r.panic)
	}
	res, err := r.res, r.err
	if err != nil && hctx.Err() != nil && ctx.Err() == nil && errors.Is(err, hctx.Err()) {
		// The handler gave up at its own deadline, before the request's.
		return refusedBy(tooLong(x.s, t, mcperr.Wrap(mcperr.KindTimeout, err)), nil, true)
	}
	if asTask && err == errStartTask {
		// The interceptor that runs tasks creates it (Answer.StartsTask).
		return Answer{startsTask: true}
	}
	return x.toolAnswer(ctx, t, k, res, err)
}

// leftRunning is the answer to a call whose handler was left running at
// its deadline (the handler's): a retryable Timeout, or Cancelled when
// the caller went away (ctx, the request's, says so).
func (x *exchange) leftRunning(ctx context.Context, t *registeredTool, deadline time.Time) Answer {
	var a Answer
	if err := ctx.Err(); mcperr.CallerCancelled(err) {
		// The caller went away and the handler did not stop: the
		// caller's doing, not an overrun of the server's.
		a = refused(mcperr.Wrap(mcperr.KindCancelled, err))
	} else {
		a = refused(tooLong(x.s, t, mcperr.NewRetryable(mcperr.KindTimeout, time.Second,
			fmt.Errorf("tool %s did not return within %v of its deadline", t.def.Name, time.Since(deadline).Round(time.Millisecond)))))
	}
	a.abandoned = true
	return a
}

// tooLong adds to a timeout refusal what a client can do about a tool
// that needs longer than one request can run: call it as a task, when the
// tool runs as one and the server serves the extension (the request did
// not declare it), or nothing, when it does not.
func tooLong(s *Server, t *registeredTool, e *mcperr.Error) *mcperr.Error {
	if t.def.TaskSupport != TaskSupportForbidden && s.taskRuns {
		return e.WithData(map[string]any{"longerThanRequest": true, "runAsTask": ExtensionTasks})
	}
	return e.WithData(map[string]any{"longerThanRequest": true})
}
