package stateless

import (
	"context"
	"encoding/json"
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
	// served only once. The interceptor that provides single-use state
	// ([Provides.SingleUseState]) redeems it before next and settles the
	// redemption with the answer.
	SingleUse string

	x *exchange
}

// Note is what an execution interceptor or a method's handler records of
// a request in its Outcome: each member it sets names the Outcome field it
// is written to, and a zero member leaves its field as it is. It is the
// only way an extension annotates the request.
type Note struct {
	// Target is the Outcome.Target the request concerns, a name of the
	// server's (a task's tool, say).
	Target string
	// Claim is the idempotency decision (Outcome.Claim: ClaimNew,
	// ClaimReplay, …).
	Claim string
	// ClaimTook, StateTook and SettleTook are added to the request's
	// Steps.Claim, Steps.State and Steps.Finish.
	ClaimTook, StateTook, SettleTook time.Duration
	// StateRefused says the request's single-use state was not redeemed
	// (spent, or held by another call): Outcome.StateOpened is false.
	StateRefused bool
	// Kind is the Outcome.Kind of an answer the interceptor made itself
	// ("task", "task_found"); a refusal's or a replay's kind is the
	// server's, recorded from the answer.
	Kind string
	// Fault is a fault the interceptor met settling what it holds once
	// the request was answered (a claim it could not complete): the
	// request is a server fault (Outcome.Fault) and this its Err.
	Fault error
}

// Note records n in the request's Outcome.
func (e *Execution) Note(n Note) { note(e.x.o, n) }

// note records n in o.
func note(o *Outcome, n Note) {
	if n.Target != "" {
		o.Target = n.Target
	}
	if n.Claim != "" {
		o.Claim = n.Claim
	}
	o.Steps.Claim += n.ClaimTook
	o.Steps.State += n.StateTook
	o.Steps.Finish += n.SettleTook
	if n.StateRefused {
		o.StateOpened = false
	}
	if n.Kind != "" {
		o.Kind = n.Kind
	}
	if n.Fault != nil {
		o.Fault, o.Err, o.ErrFromTool = true, n.Fault, false
	}
}

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
	a := e.x.result(preEncoded(obj), &resultFields{resultTyp: resultType})
	return &a
}

// executable is a request that runs one of the server's handlers — a
// tools/call, a prompts/get, a resources/read — once its method's own
// checks have passed: what the prelude the three share (execute) needs of
// it, and the handler it runs (a value of run's kinds: a method that runs
// a handler of the server's adds its kind there). It is kept in the
// exchange, so that a request that runs one allocates nothing for it.
type executable struct {
	// callOrigin is its method and target (and the server's hub), which
	// the Call's changes are recorded under (Call.origin points here).
	callOrigin
	// stateArgs are the arguments a request state of it is bound to.
	stateArgs json.RawMessage
	round     *roundTrip

	// A tools/call's: its tool, key, arguments, and whether it becomes
	// a task (Execution's Tool, Key, Arguments and Task).
	tool *registeredTool
	key  string
	args json.RawMessage
	task bool
	// A prompts/get's.
	prompt     *registeredPrompt
	promptArgs map[string]string
	// A resources/read's: the handler of the resource or template the
	// URI (target) matched, and a template's variables.
	resource ResourceHandler
	vars     map[string]string
}

// ready makes the last checks before ex's handler runs, once the
// request's state is open, and returns the handler's deadline; an answer
// it returns ends the request.
func (x *exchange) ready(ex *executable) (time.Time, *Answer) {
	if ex.tool != nil {
		return x.toolReady(ex.tool, ex.args)
	}
	return x.deadline, nil
}

// run runs ex's handler under its deadline and answers what it returned;
// k names the request a state it seals is bound to.
func (x *exchange) run(ctx context.Context, ex *executable, k stateKey, deadline time.Time) Answer {
	switch {
	case ex.tool != nil:
		return x.runCall(ctx, ex.tool, k, ex.args, deadline, ex.task)
	case ex.prompt != nil:
		return x.runPrompt(ctx, ex.prompt, ex.promptArgs, k)
	case ex.resource != nil:
		return x.runResource(ctx, ex.resource, ex.target, ex.vars, k)
	}
	panic("stateless: an executable with no handler")
}

// execute is the multi-round-trip prelude every handler of the server's
// runs after — the retry's input responses, the request state opened
// and verified — then e's handler, inside the execution interceptors,
// the first outermost. e is kept in the request's running part, so that
// it costs no allocation of its own.
func (x *exchange) execute(ctx context.Context, e executable) Answer {
	ex := &x.runs().exec
	*ex = e
	m, err := parseInputResponses(ex.round.InputResponses)
	if err != nil {
		return refused(mcperr.Wrap(mcperr.KindMalformedParams, err))
	}
	x.call.inputResponses = m
	k := stateKey{x.call.Principal, ex.method, ex.target, ex.stateArgs, x.r.Endpoint}
	if e := x.openState(ctx, k, ex.round.RequestState); e != nil {
		return refused(e)
	}
	deadline, stop := x.ready(ex)
	if stop != nil {
		return *stop
	}
	ex.hub = &x.s.hub
	x.call.origin = &ex.callOrigin
	var a Answer
	if !x.s.executes {
		// No interceptor runs around executions: spare the request the
		// allocations.
		a = x.run(ctx, ex, k, deadline)
	} else {
		a = x.runIntercepted(ctx, ex, k, deadline)
	}
	if a.msg != nil && !a.abandoned && !a.startsTask && len(x.call.changes) > 0 {
		// The handler returned a result (a replay ran none): what it
		// notified is recorded, once the interceptors settled the call.
		pctx, cancel := x.finishContext(ctx)
		x.s.publishChanges(pctx, &x.call)
		cancel()
	}
	return a
}

// runIntercepted runs ex's handler inside the execution interceptors, the
// first outermost.
func (x *exchange) runIntercepted(ctx context.Context, ex *executable, k stateKey, deadline time.Time) Answer {
	e := &Execution{Method: ex.method, Target: ex.target, Principal: x.call.Principal, Call: &x.call,
		Key: ex.key, Arguments: ex.args, Task: ex.task, Deadline: deadline, SingleUse: x.redeemID, x: x}
	if ex.tool != nil {
		e.Tool = &ex.tool.def
	}
	rs := x.runs()
	next := func(ctx context.Context) *Answer {
		// The handler runs once per request: its answer is kept in the
		// exchange rather than allocated.
		rs.held = x.run(ctx, ex, k, deadline)
		return &rs.held
	}
	// Built inside out; the outermost interceptor is called here rather
	// than wrapped, which spares each call one closure.
	ics := x.s.interceptors
	var outer func(context.Context, *Execution, func(context.Context) *Answer) *Answer
	for i := len(ics) - 1; i >= 0; i-- {
		if ic := ics[i].Execute; ic != nil {
			if outer != nil {
				wrapped, inner := outer, next
				next = func(ctx context.Context) *Answer { return wrapped(ctx, e, inner) }
			}
			outer = ic
		}
	}
	if outer == nil {
		return *next(ctx)
	}
	return *outer(ctx, e, next)
}
