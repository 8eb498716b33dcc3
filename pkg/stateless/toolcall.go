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
// then the claim and the state's redemption, the handler under its own
// deadline, and the claim's completion, which may carry the tool's
// enlisted writes.
func (x *exchange) serveCallTool(ctx context.Context, p *callToolParams) *Response {
	d := x.d
	if p.Name == nil {
		return x.refuse(d.id, mcperr.New(mcperr.MalformedParams))
	}
	name := *p.Name
	t := x.reg.tool(name)
	if t == nil || (t.def.Visible != nil && !t.def.Visible(ctx, x.call.Principal)) {
		return x.refuse(d.id, mcperr.NewUnknownTool(suggest(name, x.visibleToolNames(ctx))))
	}
	x.o.Target = t.def.Name
	if err := t.prepare(); err != nil {
		return x.refuse(d.id, mcperr.Wrap(mcperr.Internal, err))
	}
	if !checkParamHeaders(x.r.Header, t.params, p.Arguments, !x.legacy) {
		return x.refuse(d.id, mcperr.New(mcperr.HeaderMismatch))
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
		return x.refuse(d.id, mcperr.Wrap(mcperr.MalformedParams, errors.New("arguments is not an object")))
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
	claimStart := time.Now()
	deadline := claimStart.Add(t.def.maxDuration())
	if rd := x.deadline.Add(-x.s.opts.DeadlineMargin); rd.Before(deadline) {
		deadline = rd
	}
	if !deadline.After(claimStart) {
		return x.refuse(d.id, tooLong(x, t, mcperr.NewRetryable(mcperr.Timeout, time.Second, errors.New("no time left to run the tool before the request's deadline"))))
	}
	if n := x.s.overdue.Load(); int(n) >= x.s.opts.MaxOverdue {
		return x.refuse(d.id, mcperr.NewRetryable(mcperr.Timeout, time.Second, fmt.Errorf("%d tool handlers are still running past their deadline", n)))
	}
	// A read-only tool takes no claim, unless its call becomes a task: a
	// keyed retry of a lost CreateTaskResult must find the task it made,
	// not start another worker.
	var ticket Ticket
	if idem := x.s.opts.Idempotency; idem != nil && (!t.def.ReadOnly() || asTask) && (x.call.IdempotencyKey != "" || t.def.IdempotentByArguments) {
		replay, tk, refusal := idem.Begin(x.bounded(ctx), &IdempotentCall{Principal: x.call.Principal, Tool: t.def.Name, Key: x.call.IdempotencyKey, Arguments: args,
			Lease: deadline.Sub(claimStart)})
		x.o.Steps.Claim = time.Since(claimStart)
		if refusal != nil {
			x.o.Claim = claimDecision(refusal.Kind())
			return x.refuse(d.id, refusal)
		}
		if replay != nil {
			x.o.Claim = ClaimReplay
			marked, err := markedReplay(replay)
			if err != nil {
				return x.refuse(d.id, mcperr.Wrap(mcperr.Internal, fmt.Errorf("stored result does not decode: %w", err)))
			}
			x.o.Kind = "replay"
			return x.respond(appendRawResult(nil, d.id, marked))
		}
		x.o.Claim = ClaimNew
		ticket = tk
		defer func() {
			// A handler that panicked, or a path that left without a
			// result, gives the claim up so a retry can run.
			if ticket != nil {
				x.finishClaim(ctx, ticket.Release)
			}
		}()
	}
	// A single-use state is redeemed after the claim (a replay wins),
	// under the handler's deadline, so that its lease is the claim's, and
	// settled with the outcome.
	if x.redeemID != "" {
		rctx, cancel := context.WithDeadline(ctx, deadline)
		e := x.redeemState(rctx)
		cancel()
		if e != nil {
			return x.refuse(d.id, e)
		}
	}
	defer x.releaseState(ctx)
	handlerStart := time.Now()
	hctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if ticket != nil {
		hctx = context.WithValue(hctx, ticketKey{}, ticket)
	}
	h := t.handler
	if asTask {
		// The request's part of a task: BeforeTask's input rounds, then
		// the task's creation.
		h = beforeTask(t)
	}
	r, returned := x.runTool(hctx, t, args, h)
	x.o.Steps.Handler = time.Since(handlerStart)
	if !returned {
		// Abandoned: the claim is neither completed nor released, by
		// this request or by the handler when it returns. It stays in
		// progress until its lease ends, which outlasts the handler's
		// deadline, so a retry cannot run the tool beside it. A
		// single-use state stays held the same way, until its lease ends.
		ticket = nil
		x.redemption = nil
		return x.refuse(d.id, tooLong(x, t, mcperr.NewRetryable(mcperr.Timeout, time.Second,
			fmt.Errorf("tool %s did not return within %v of its deadline", t.def.Name, time.Since(deadline).Round(time.Millisecond)))))
	}
	if r.panic != nil {
		// The deferred release gives the claim up.
		x.o.Panic, x.o.Err, x.o.ErrFromTool = r.panic, errPanic, true
		return x.refuse(d.id, mcperr.New(mcperr.Internal))
	}
	res, err := r.res, r.err
	if err != nil && hctx.Err() != nil && ctx.Err() == nil && errors.Is(err, hctx.Err()) {
		// The handler gave up at its own deadline, before the request's.
		x.o.ErrFromTool = true
		return x.refuse(d.id, tooLong(x, t, mcperr.Wrap(mcperr.Timeout, err)))
	}
	var resp *Response
	if asTask && err == errStartTask {
		resp = x.createTask(ctx, t, args)
	} else {
		resp = x.toolOutcome(ctx, t, b, res, err)
	}
	if ticket != nil {
		// A retryable failure is not kept: its retry runs the tool.
		if x.res.obj != nil && !x.inputRequired && !x.retryable {
			resp = x.completeClaim(ctx, ticket, resp)
		} else {
			_ = x.finishClaim(ctx, ticket.Release)
		}
		ticket = nil
	}
	// The claim first: a result that was not committed is answered as a
	// retryable refusal, and then the state is released for the retry.
	x.finishState(ctx)
	return resp
}

// tooLong adds to a timeout refusal what a client can do about a tool
// that needs longer than one request can run: call it as a task, when the
// tool runs as one and the server serves the extension (the request did
// not declare it), or nothing, when it does not.
func tooLong(x *exchange, t *registeredTool, e *mcperr.Error) *mcperr.Error {
	if t.def.TaskSupport != TaskForbidden && x.s.tasks != nil {
		return e.WithData(map[string]any{"longerThanRequest": true, "runAsTask": ExtensionTasks})
	}
	return e.WithData(map[string]any{"longerThanRequest": true})
}
