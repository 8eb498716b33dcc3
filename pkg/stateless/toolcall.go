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
// tool (hidden answers as absent), its Mcp-Param-* headers, scopes, the
// idempotency key, the request state, the arguments against the schema,
// then, inside the execution interceptors (package claims's claim and
// redemption), the handler under its own deadline.
func (x *exchange) serveCallTool(ctx context.Context, p *callToolParams) *Response {
	d := x.d
	if p.Name == nil {
		return x.refuse(d.id, mcperr.New(mcperr.KindMalformedParams))
	}
	name := *p.Name
	t := x.reg.tool(name)
	if t == nil || (t.def.Visible != nil && !t.def.Visible(ctx, x.call.Principal)) {
		return x.refuse(d.id, mcperr.NewUnknownTool(suggest(name, x.visibleToolNames(ctx))))
	}
	x.o.Target = t.def.Name
	if err := t.prepare(); err != nil {
		return x.refuse(d.id, mcperr.Wrap(mcperr.KindInternal, err))
	}
	if !checkParamHeaders(x.r.Header, t.params, p.Arguments, !x.legacy) {
		return x.refuse(d.id, mcperr.New(mcperr.KindHeaderMismatch))
	}
	if e := x.checkScopes(t); e != nil {
		return x.refuse(d.id, e)
	}
	asTask, e := runsAsTask(x, t)
	if e != nil {
		return x.refuse(d.id, e)
	}
	args := bytes.TrimSpace(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	} else if args[0] != '{' {
		return x.refuse(d.id, mcperr.Wrap(mcperr.KindMalformedParams, errors.New("arguments is not an object")))
	}
	if e := x.readInputResponses(&p.roundTrip); e != nil {
		return x.refuse(d.id, e)
	}
	// An unusable key is refused whether or not the tool takes claims:
	// dropping it would run a side-effecting call unclaimed.
	key, e := idempotencyKey(json.RawMessage(p.IdempotencyKey), x.r.Header)
	if e != nil {
		return x.refuse(d.id, e)
	}
	x.call.IdempotencyKey = key
	b := stateKeyOf(x, "tools/call", t.def.Name, args)
	if e := x.openState(ctx, b, p.RequestState); e != nil {
		return x.refuse(d.id, e)
	}
	if err := t.input.validate(args); err != nil {
		return toolFailure(x, mcperr.NewInvalidArguments(err.Error()))
	}
	// The handler's deadline: the earlier of the tool's MaxDuration and
	// the request's deadline less the margin, by which the call is
	// answered whether the handler has returned or not.
	now := time.Now()
	deadline := now.Add(t.def.maxDuration())
	if rd := x.deadline.Add(-x.s.opts.DeadlineMargin); rd.Before(deadline) {
		deadline = rd
	}
	if !deadline.After(now) {
		return x.refuse(d.id, tooLong(x, t, mcperr.NewRetryable(mcperr.KindTimeout, time.Second, errors.New("no time left to run the tool before the request's deadline"))))
	}
	if n := x.s.overdue.Load(); int(n) >= x.s.opts.MaxOverdue {
		return x.refuse(d.id, mcperr.NewRetryable(mcperr.KindTimeout, time.Second, fmt.Errorf("%d tool handlers are still running past their deadline", n)))
	}
	if !x.s.executes {
		return x.runCall(ctx, t, b, args, deadline, asTask)
	}
	return x.execute(ctx, &Execution{Method: "tools/call", Target: t.def.Name, Principal: x.call.Principal, Call: &x.call, Tool: &t.def,
		Key: x.call.IdempotencyKey, Arguments: args, Task: asTask, Deadline: deadline, SingleUse: x.redeemID, x: x},
		func(ctx context.Context) *Response { return x.runCall(ctx, t, b, args, deadline, asTask) })
}

// runCall runs a tool's handler under its deadline and answers what it
// returned: its result, the task it became, or a refusal when it panicked
// or overran.
func (x *exchange) runCall(ctx context.Context, t *registeredTool, b stateKey, args json.RawMessage, deadline time.Time, asTask bool) *Response {
	id := x.d.id
	handlerStart := time.Now()
	hctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	h := t.handler
	if asTask {
		// The request's part of a task: BeforeTask's input rounds, then
		// the task's creation.
		h = beforeTask(t)
	}
	r, returned := x.runTool(hctx, t, args, h)
	x.o.Steps.Handler = time.Since(handlerStart)
	if !returned {
		x.abandoned = true
		if err := ctx.Err(); mcperr.CallerCancelled(err) {
			// The caller went away and the handler did not stop: the
			// caller's doing, not an overrun of the server's.
			return x.refuse(id, mcperr.Wrap(mcperr.KindCancelled, err))
		}
		return x.refuse(id, tooLong(x, t, mcperr.NewRetryable(mcperr.KindTimeout, time.Second,
			fmt.Errorf("tool %s did not return within %v of its deadline", t.def.Name, time.Since(deadline).Round(time.Millisecond)))))
	}
	if r.panic != nil {
		x.o.Panic, x.o.Err, x.o.ErrFromTool = r.panic, errPanic, true
		resp := x.refuse(id, mcperr.New(mcperr.KindInternal))
		x.retryable = true // nothing happened that a retry must see
		return resp
	}
	res, err := r.res, r.err
	if err != nil && hctx.Err() != nil && ctx.Err() == nil && errors.Is(err, hctx.Err()) {
		// The handler gave up at its own deadline, before the request's.
		x.o.ErrFromTool = true
		return x.refuse(id, tooLong(x, t, mcperr.Wrap(mcperr.KindTimeout, err)))
	}
	if asTask && err == errStartTask {
		// The tasks interceptor creates the task (Answer.StartsTask).
		x.startsTask = true
		return nil
	}
	return x.toolOutcome(ctx, t, b, res, err)
}

// tooLong adds to a timeout refusal what a client can do about a tool
// that needs longer than one request can run: call it as a task, when the
// tool runs as one and the server serves the extension (the request did
// not declare it), or nothing, when it does not.
func tooLong(x *exchange, t *registeredTool, e *mcperr.Error) *mcperr.Error {
	if t.def.TaskSupport != TaskSupportForbidden && x.s.tasks {
		return e.WithData(map[string]any{"longerThanRequest": true, "runAsTask": ExtensionTasks})
	}
	return e.WithData(map[string]any{"longerThanRequest": true})
}
