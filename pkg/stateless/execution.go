package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Execution is a request about to run its handler — a tools/call, a
// prompts/get or a resources/read — once it has passed every check the
// server makes (the target, its headers and scopes, the idempotency key,
// the request state, the arguments against the schema), as an
// [Interceptor]'s Execute sees it. Package claims claims idempotency keys
// and redeems single-use request state here.
type Execution struct {
	// Method is the request's method; Target the tool's or prompt's name
	// or the resource's URI.
	Method, Target string
	// Principal is the caller (Anonymous when unidentified).
	Principal string
	// Call is the request's caller, revision, capabilities and, on a
	// multi-round-trip retry, its answers and opened state (read only).
	Call *Call
	// Tool is the called tool's definition; nil for a prompt or a
	// resource.
	Tool *Tool
	// Key is the tools/call's idempotency key, "" when it carries none.
	Key string
	// Arguments are the tool's arguments as sent (validated; "{}" when
	// absent); nil for a prompt or a resource.
	Arguments json.RawMessage
	// Task says the tools/call becomes a task: its answer is the task's
	// creation (the tasks extension), which a keyed retry must find
	// rather than start another.
	Task bool
	// Deadline is when the handler's time ends: for a tool the earlier of
	// its MaxDuration and the request's deadline less the server's
	// DeadlineMargin, for a prompt or a resource the request's deadline.
	// The call is answered then, whether the handler has returned or not.
	Deadline time.Time
	// SingleUse identifies the single-use request state the request
	// carries (a digest of its token; "" when it carries none): it is
	// served only once. The interceptor that redeems single-use states
	// ([Interceptor.RedeemsState]) redeems it before next and settles the
	// redemption with the answer.
	SingleUse string

	x *exchange
}

// Outcome is the request's outcome, which the interceptor annotates with
// what it decided and what it cost (Claim, Steps.Claim, Steps.State,
// Steps.Finish, StateOpened) and with a fault it met settling what it
// holds once the request is answered (Fault and Err): the server reports
// it once the request is answered.
func (e *Execution) Outcome() *Outcome { return e.x.o }

// SettleContext is the context in which what an interceptor holds is
// settled once next has answered: not cancelled with the request (the
// answer exists and must be recorded, or what was held freed), and ending
// a fifth of the DeadlineMargin before the request's deadline — the
// invocation's, on Lambda — so that the answer still leaves in time, and
// at most 10 seconds from now. A handler that returned after that point
// is answered late anyway: what it did gets 10 seconds to be recorded, so
// that a keyed retry replays it rather than running the tool again.
func (e *Execution) SettleContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return e.x.finishContext(ctx)
}

// Result answers the request with obj, a result object the interceptor
// made in place of the handler's (a task's creation, resultType "task"),
// encoded now, as the handler's would have been, so that an interceptor
// outside this one sees it as a result (Answer.Result, Keep).
func (e *Execution) Result(obj json.RawMessage, resultType string) *Answer {
	x := e.x
	x.res, x.inputRequired, x.retryable, x.startsTask = encodedResult{}, false, false, false
	return x.answer(x.result(preEncoded(obj), &resultFields{resultTyp: resultType}))
}

// Answer is what an execution answered, as an interceptor around it sees
// it: a result, a refusal, a handler left running or a handler that
// panicked.
type Answer struct {
	resp *Response
	// res is the result object answered (nil for a refusal).
	res encodedResult
	// keep says the result is one a retry must get again.
	keep, retryable, abandoned, startsTask bool
	// refusal and replay are answers an interceptor made itself, which
	// the server renders.
	refusal *mcperr.Error
	replay  json.RawMessage
}

// Result is the result object answered, in the form a replay of it sends
// (marked with [MetaReplay]), for an interceptor to store; nil when the
// answer is not a result.
func (a *Answer) Result() []byte {
	if a.res.obj == nil {
		return nil
	}
	return a.res.replayForm()
}

// Keep reports whether the answer is a result a retry of the request must
// get again: a result that neither asked for input nor reports a failure
// its retry may not meet (a RetryLater tool failure).
func (a *Answer) Keep() bool { return a.keep }

// Retryable reports whether a retry of the request may be answered
// otherwise: a RetryLater tool failure, a retryable refusal (a timeout,
// say), or a handler that panicked.
func (a *Answer) Retryable() bool { return a.retryable }

// Abandoned reports that the handler had not returned by its deadline and
// may still be running: whatever it holds must stay held until it could
// no longer be (a claim's lease), so that a retry cannot run beside it.
func (a *Answer) Abandoned() bool { return a.abandoned }

// StartsTask reports that the call is to become a task: the tool's
// BeforeTask let it through, and the interceptor that serves tasks
// (Interceptor.Tasks) creates it and answers with it (Execution.Result).
func (a *Answer) StartsTask() bool { return a.startsTask }

// Replay answers the request with a result stored by an earlier execution
// (Answer.Result's form), marked as a replay, in place of running the
// handler.
func Replay(stored json.RawMessage) *Answer { return &Answer{replay: stored} }

// Refusal answers the request with a refusal in place of what it would
// have answered (its progress notifications are dropped with it). A
// retryable refusal's retry may run the handler again.
func Refusal(e *mcperr.Error) *Answer { return &Answer{refusal: e, retryable: e.Retryable()} }

// execute runs run, the handler and what answers its return, inside the
// execution interceptors, the first outermost, and renders what they
// answered. (A server without them calls run itself, sparing the
// request the allocations.)
func (x *exchange) execute(ctx context.Context, e *Execution, run func(ctx context.Context) *Response) *Response {
	next := func(ctx context.Context) *Answer {
		// The handler runs once per request: its answer is the exchange's.
		x.answered = x.answerOf(run(ctx))
		return &x.answered
	}
	ics := x.s.opts.Interceptors
	for i := len(ics) - 1; i >= 0; i-- {
		if ic := ics[i].Execute; ic != nil {
			inner := next
			next = func(ctx context.Context) *Answer { return ic(ctx, e, inner) }
		}
	}
	return x.render(next(ctx))
}

// answer makes the Answer of a response the exchange produced.
func (x *exchange) answer(resp *Response) *Answer {
	a := x.answerOf(resp)
	return &a
}

func (x *exchange) answerOf(resp *Response) Answer {
	if x.startsTask {
		return Answer{startsTask: true}
	}
	return Answer{resp: resp, res: x.res, retryable: x.retryable, abandoned: x.abandoned,
		keep: x.res.obj != nil && !x.inputRequired && !x.retryable}
}

// render is the response of an answer: its own, or the one an
// interceptor's replay or refusal makes.
func (x *exchange) render(a *Answer) *Response {
	switch {
	case a.replay != nil:
		marked, err := markedReplay(a.replay)
		if err != nil {
			return x.refuse(x.d.id, mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("stored result does not decode: %w", err)))
		}
		x.o.Kind = "replay"
		x.call.notes = nil
		return x.respond(appendRawResult(nil, x.d.id, marked))
	case a.refusal != nil:
		x.call.notes = nil
		return x.refuse(x.d.id, a.refusal)
	case a.startsTask:
		return x.refuse(x.d.id, mcperr.Wrap(mcperr.KindInternal, errors.New("the call was to become a task, and no interceptor created it")))
	}
	return a.resp
}

// executors says whether an interceptor runs around executions, and
// whether one claims idempotency keys, one redeems single-use states and
// one serves tasks.
func executors(ics []Interceptor) (executes, claims, redeems, tasks bool) {
	for _, ic := range ics {
		if ic.Execute != nil {
			executes = true
			claims = claims || ic.Idempotent
			redeems = redeems || ic.RedeemsState
			tasks = tasks || ic.Tasks
		}
	}
	return executes, claims, redeems, tasks
}
