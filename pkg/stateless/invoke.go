package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Invocation is a call of a registered tool that no request carries: a
// task's run, which package tasks's worker makes with the call it stored.
// The handler sees it as it saw the request that made the task.
type Invocation struct {
	// Tool is the tool's name.
	Tool string
	// The call as the request made it: its caller, revision, key and
	// client capabilities (the clientCapabilities object as sent).
	Principal, ProtocolVersion, IdempotencyKey string
	Capabilities                               json.RawMessage
	// Arguments are the tool's arguments.
	Arguments json.RawMessage
	// InputResponses and State are what the handler reads back on a run
	// after an input round ([Call.InputResponse], [Call.State]).
	InputResponses map[string]json.RawMessage
	State          []byte
	HasState       bool
	// Task is what the handler sees of the task it runs in
	// ([ToolRequest.Task]).
	Task *TaskRun
	// Outcome, which must be set, is annotated as a request's would be:
	// the handler's time, its panic, its error.
	Outcome *Outcome
}

// Invoked is what an invocation's handler came to.
type Invoked struct {
	// Result is the result object it answered (isError results
	// included), encoded as a tools/call's result would be, with no
	// era's decorations.
	Result json.RawMessage
	// Refusal is the refusal the call was answered with instead: the
	// handler's own *mcperr.Error, a Timeout, an internal error (a result
	// that does not match its output schema, say).
	Refusal *mcperr.Error
	// Input is the handler's request for input (it returned
	// *InputRequired), whose requests' capabilities the client declared:
	// a request it did not is refused with -32021 instead.
	Input *InputRequired
	// Abandoned says the handler had not returned by ctx's deadline (and
	// the short grace after): it may still be running.
	Abandoned bool
}

// ErrNoTool is Invoke's error for a tool that is not registered.
var ErrNoTool = errors.New("stateless: no such tool")

// Invoke runs the handler of the registered tool inv names, under ctx
// (whose deadline is the handler's), as tools/call runs it — on its own
// goroutine, abandoned at the deadline, a panic recovered — and returns
// what it came to. Its error is ErrNoTool for a tool that is not
// registered, or the reason a tool cannot run (its schemas do not
// compile); the handler did not run then.
func (s *Server) Invoke(ctx context.Context, inv *Invocation) (*Invoked, error) {
	reg := s.reg.Load()
	t := reg.tool(inv.Tool)
	if t == nil {
		return nil, ErrNoTool
	}
	if err := t.prepare(); err != nil {
		return nil, err
	}
	o := inv.Outcome
	call := &Call{Principal: inv.Principal, ProtocolVersion: inv.ProtocolVersion, IdempotencyKey: inv.IdempotencyKey,
		origin: &callOrigin{target: inv.Tool, method: "tools/call", hub: &s.hub}, capsRaw: inv.Capabilities, inputResponses: inv.InputResponses, state: inv.State, hasState: inv.HasState}
	if l := s.opts.HandlerLogger; l != nil {
		call.telemetry = &telemetry{ctx: ctx, base: l, method: MethodTaskRun, target: inv.Tool}
	}
	defer func() { o.Metrics = call.metrics }()
	h := t.handler
	if inv.Task != nil {
		h = func(ctx context.Context, req *ToolRequest) (*CallToolResult, error) {
			req.Task = inv.Task
			return t.handler(ctx, req)
		}
	}
	start := time.Now()
	r, returned := runTool(ctx, s, t, call, inv.Arguments, h, nil)
	o.Steps.Handler = time.Since(start)
	var ir *InputRequired
	var a Answer
	switch {
	case !returned:
		return &Invoked{Abandoned: true}, nil
	case r.panic != nil:
		a = panicked(r.panic)
	case errors.As(r.err, &ir):
		if missing := call.MissingCapabilities(ir.Requests); missing != nil {
			return &Invoked{Refusal: mcperr.NewMissingCapability(missing)}, nil
		}
		return &Invoked{Input: ir}, nil
	default:
		// Encoded as a tools/call's answer would be; only the result
		// object is kept, so the message's id is immaterial.
		a = replier{s: s, id: invokedID}.toolResult(ctx, t, r.res, r.err)
	}
	a = r.overran(a)
	o.classify(&a)
	if a.refusal != nil {
		return &Invoked{Refusal: a.refusal}, nil
	}
	// The handler returned a result: what it notified is recorded, as a
	// request's call records it.
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), maxFinish)
	s.publishChanges(pctx, call)
	cancel()
	return &Invoked{Result: slices.Clone(a.res.obj)}, nil
}

// invokedID is the id of the message an invocation's result is encoded
// in (Server.Invoke keeps only the result object).
var invokedID = json.RawMessage("0")

// Report reports o, the outcome of work done outside a request (a task's
// run), as every request's is: the log line of a failure, and
// Options.Observe.
func (s *Server) Report(ctx context.Context, o *Outcome) { s.report(ctx, o) }

// DeadlineMargin is the server's Options.DeadlineMargin, with its
// default: how long before a deadline work is answered.
func (s *Server) DeadlineMargin() time.Duration { return s.opts.DeadlineMargin }
