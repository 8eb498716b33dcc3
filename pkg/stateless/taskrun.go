package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// runsAsTask decides whether a tools/call of t becomes a task: when the
// tool supports tasks, the server serves them and the client declared the
// extension on this request. A tool that only runs as a task, called by a
// client that did not declare it, is refused -32021 naming it.
func runsAsTask(x *exchange, t *registeredTool) (bool, *mcperr.Error) {
	if t.def.TaskSupport == TaskForbidden || x.s.tasks == nil {
		return false, nil
	}
	if !x.legacy && declaresTasks(&x.call) {
		return true, nil
	}
	if t.def.TaskSupport == TaskRequired {
		return false, missingTasksExtension()
	}
	return false, nil
}

// errStartTask is what the request's part of a task call returns when the
// task is to be created: BeforeTask, if any, let it through.
var errStartTask = errors.New("stateless: start the task")

// beforeTask is the handler run in the request of a call that becomes a
// task: the tool's BeforeTask, then the signal to create it.
func beforeTask(t *registeredTool) ToolHandler {
	return func(ctx context.Context, req *ToolRequest) (*CallToolResult, error) {
		if t.def.BeforeTask != nil {
			if err := t.def.BeforeTask(ctx, req); err != nil {
				return nil, err
			}
		}
		return nil, errStartTask
	}
}

// createTask stores the call as a new task, hands it to a worker and
// answers with it. The answer leaves only once the task is stored, so a
// tasks/get right after it finds it; a task no worker could be given is
// failed and the call refused retryably.
func createTask(x *exchange, ctx context.Context, t *registeredTool, args json.RawMessage) *Response {
	to := x.s.tasks
	ctx = bounded(x, ctx)
	size := len(args) + len(x.call.state)
	for _, v := range x.call.inputResponses {
		size += len(v)
	}
	if size > maxTaskCall {
		return x.refuse(x.d.id, mcperr.Wrap(mcperr.MalformedParams, fmt.Errorf("a call of %d bytes is too large to run as a task (at most %d)", size, maxTaskCall)))
	}
	now := time.Now()
	rec := &TaskRecord{
		ID: newTaskID(), Version: 1, Principal: x.call.Principal, Tool: t.def.Name, Status: TaskWorking,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(to.TTL),
		Arguments: args, ProtocolVersion: x.version, Capabilities: x.call.capsRaw, IdempotencyKey: x.call.IdempotencyKey,
		State: x.call.state, HasState: x.call.hasState, Responses: x.call.inputResponses,
		LeaseUntil: now.Add(to.DispatchGrace),
	}
	if err := to.Store.Create(ctx, rec); err != nil {
		return x.refuse(x.d.id, mcperr.NewRetryable(mcperr.DependencyFailure, time.Second, fmt.Errorf("creating the task: %w", err)))
	}
	if err := dispatchTask(x.s, ctx, rec.ID); err != nil {
		_, _ = mutateTask(context.WithoutCancel(ctx), to.Store, rec.ID, func(r *TaskRecord, _ time.Time) bool {
			if r.Status.Terminal() {
				return false
			}
			failTask(r, mcperr.Wrap(mcperr.DependencyFailure, nil), "No worker could be started for the task.")
			return true
		})
		return x.refuse(x.d.id, mcperr.NewRetryable(mcperr.DependencyFailure, time.Second, fmt.Errorf("dispatching the task: %w", err)))
	}
	x.o.Kind = "task"
	return x.result(preEncoded(appendTask(nil, to, rec, false)), &resultFields{resultTyp: "task"})
}

// dispatchTask hands the task to a worker: TaskOptions.Dispatch, or a
// goroutine of this process.
func dispatchTask(s *Server, ctx context.Context, id string) error {
	if d := s.tasks.Dispatch; d != nil {
		return d(ctx, id)
	}
	go s.RunTask(context.Background(), id) //nolint:errcheck // a failed run is re-driven by tasks/get
	return nil
}

// RunTask is a task's worker: it takes the task with id, runs its tool's
// handler with the task's call, and records the outcome — completed with
// the result (isError results included), failed with a JSON-RPC error,
// input_required with the handler's input requests — unless the task was
// cancelled meanwhile, which cancels the handler's context.
//
// Taking the task is a versioned write that succeeds for one worker only:
// a duplicate delivery, or a worker arriving while another holds the
// task's lease, does nothing and returns nil. So does a task that ended,
// waits for input, or is gone. The handler runs until ctx's deadline
// less Options.DeadlineMargin (on Lambda, the invocation's), at most
// TaskOptions.MaxRun; a task whose handler is still running then fails
// with a Timeout. A worker that dies holds the task until its lease
// lapses, and the next tasks/get dispatches it again.
//
// It returns an error only when the store could not be read or written:
// the caller may retry (Lambda retries an asynchronous invocation).
func (s *Server) RunTask(ctx context.Context, id string) error {
	to := s.tasks
	if to == nil {
		return errors.New("stateless: RunTask needs Options.Tasks")
	}
	start := time.Now()
	o := &Outcome{Method: "tasks/run", Version: Version20260728}
	defer func() {
		o.Duration = time.Since(start)
		report(s, ctx, o)
	}()
	end := start.Add(to.MaxRun)
	if d, ok := ctx.Deadline(); ok && d.Add(-s.opts.DeadlineMargin).Before(end) {
		end = d.Add(-s.opts.DeadlineMargin)
	}
	owner := newTaskID()
	rec, err := mutateTask(ctx, to.Store, id, func(r *TaskRecord, now time.Time) bool {
		if r.Status != TaskWorking || r.Owner != "" && now.Before(r.LeaseUntil) {
			return false
		}
		if failIfOutOfRuns(r, to) {
			return true
		}
		r.Owner, r.Attempts, r.LeaseUntil = owner, r.Attempts+1, end.Add(s.opts.DeadlineMargin)
		return true
	})
	switch {
	case errors.Is(err, ErrNoTask):
		return nil
	case err != nil:
		o.Fault, o.Err = true, fmt.Errorf("taking the task: %w", err)
		return o.Err
	case rec.Owner != owner:
		o.Kind = "task_not_taken"
		return nil
	}
	o.Target = rec.Tool
	finish := runTaskHandler(s, ctx, o, rec, end)
	_, err = mutateTask(context.WithoutCancel(ctx), to.Store, id, func(r *TaskRecord, now time.Time) bool {
		if r.Status != TaskWorking || r.Owner != owner {
			return false // cancelled meanwhile, or taken over: its outcome stands
		}
		finish(r)
		return true
	})
	if err != nil {
		o.Fault, o.Err = true, fmt.Errorf("recording the task's outcome: %w", err)
		return o.Err
	}
	return nil
}

// runTaskHandler runs the handler of the task rec, which this worker holds, and
// returns how its outcome changes the record.
func runTaskHandler(s *Server, ctx context.Context, o *Outcome, rec *TaskRecord, end time.Time) func(*TaskRecord) {
	t := s.reg.Load().tool(rec.Tool)
	if t == nil {
		return failWith(o, mcperr.Wrap(mcperr.Internal, errors.New("the task's tool is no longer registered")), "The task's tool is gone.")
	}
	if err := t.prepare(); err != nil {
		return failWith(o, mcperr.Wrap(mcperr.Internal, err), "The task's tool cannot run.")
	}
	x := &exchange{s: s, o: o, reg: s.reg.Load(), d: &decoded{id: json.RawMessage("0")}, version: rec.ProtocolVersion, deadline: end.Add(s.opts.DeadlineMargin)}
	x.call = Call{Principal: rec.Principal, ProtocolVersion: rec.ProtocolVersion, IdempotencyKey: rec.IdempotencyKey,
		capsRaw: rec.Capabilities, inputResponses: rec.Responses, state: rec.State, hasState: rec.HasState}
	hctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var cancelled atomic.Bool
	go watchTask(s, hctx, rec.ID, rec.Owner, &cancelled, cancel)
	run := &TaskRun{ID: rec.ID, Attempt: rec.Attempts}
	h := func(ctx context.Context, req *ToolRequest) (*CallToolResult, error) {
		req.Task = run
		return t.handler(ctx, req)
	}
	handlerStart := time.Now()
	r, returned := runTool(x, hctx, t, rec.Arguments, h)
	o.Steps.Handler = time.Since(handlerStart)
	var ir *InputRequired
	var me *mcperr.Error
	switch {
	case cancelled.Load():
		o.Kind = "task_cancelled"
		return func(*TaskRecord) {}
	case !returned:
		return failWith(o, mcperr.NewRetryable(mcperr.Timeout, 0, errors.New("the task's handler did not return before its run's end")), "The task did not finish in the time a run has.")
	case r.panic != nil:
		o.Panic, o.ErrFromTool = r.panic, true
		return failWith(o, mcperr.Wrap(mcperr.Internal, errPanic), "The task failed.")
	case errors.As(r.err, &ir):
		return inputRound(x, o, ir)
	case errors.As(r.err, &me):
		o.ErrFromTool = true
		return failWith(o, me, "The task failed.")
	}
	resp := toolOutcome(x, hctx, t, stateKey{}, r.res, r.err)
	if x.res.obj == nil {
		var msg struct{ Error json.RawMessage }
		if json.Unmarshal(resp.Body, &msg) != nil || len(msg.Error) == 0 {
			msg.Error = []byte(`{"code":-32603,"message":"Internal error"}`)
		}
		return func(r *TaskRecord) {
			failTask(r, mcperr.New(mcperr.Internal), "The task failed.")
			r.Error = msg.Error
		}
	}
	if len(x.res.obj) > maxTaskResult {
		return failWith(o, mcperr.Wrap(mcperr.Internal, fmt.Errorf("the task's result is %d bytes, more than a task keeps (%d)", len(x.res.obj), maxTaskResult)),
			"The task's result is too large to keep.")
	}
	result := slices.Clone(x.res.obj)
	return func(r *TaskRecord) {
		r.Status, r.Result, r.Error, r.Requests, r.Owner, r.Message = TaskCompleted, result, nil, nil, "", ""
	}
}

// inputRound is the outcome of a run that asks for input: the task waits
// for it, with the requests outstanding and the handler's state kept in
// the record (server-side: it needs no seal). Keys are unique over the
// task's life, and each request needs the capability the client declared
// when it called.
func inputRound(x *exchange, o *Outcome, ir *InputRequired) func(*TaskRecord) {
	if len(ir.Requests) == 0 {
		return failWith(o, mcperr.Wrap(mcperr.Internal, errors.New("handler returned InputRequired with no requests in a task")), "The task failed.")
	}
	missing := map[string]any{}
	reqs := make(map[string]json.RawMessage, len(ir.Requests))
	for k, r := range ir.Requests {
		for c, v := range requiredCapability(x.call.Capabilities(), r) {
			missing[c] = v
		}
		b, err := json.Marshal(r)
		if err != nil {
			return failWith(o, mcperr.Wrap(mcperr.Internal, err), "The task failed.")
		}
		reqs[k] = b
	}
	if len(missing) > 0 {
		return failWith(o, mcperr.NewMissingCapability(missing), "The task needs input the client cannot give.")
	}
	o.Kind = "input_required"
	return func(r *TaskRecord) {
		for k := range reqs {
			if slices.Contains(r.Asked, k) {
				failTask(r, mcperr.Wrap(mcperr.Internal, nil), "The task asked for input under a key it had used.")
				o.Fault, o.Err = true, errors.New("a task's handler reused an input request key")
				return
			}
		}
		r.Status, r.Requests, r.Owner, r.Message = TaskInputRequired, reqs, "", "Waiting for input."
		r.Asked = append(r.Asked, sortedKeys(reqs)...)
		r.State, r.HasState = ir.State, ir.State != nil
		r.Attempts = 0 // the run ended: the next is a new round's
	}
}
