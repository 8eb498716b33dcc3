package stateless

// A task's worker: taking the task, running its handler, and recording
// the outcome of the run.

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
// with a Timeout. The outcome's write is tried again while the store
// fails, until the worker's lease ends (see recordOutcome), so that a
// handler that completed is not run again for one failed write. A worker
// that dies holds the task until its lease lapses (and the skew allowed
// between clocks), and the next tasks/get dispatches it again.
//
// It returns an error only when the store could not be read or written:
// the caller may retry (Lambda retries an asynchronous invocation).
func (s *Server) RunTask(ctx context.Context, id string) error {
	to := s.tasks
	if to == nil {
		return errors.New("stateless: RunTask needs Options.Tasks")
	}
	start := time.Now()
	o := &Outcome{Method: MethodTaskRun, TaskRun: true, Version: Version20260728}
	defer func() {
		o.Duration = time.Since(start)
		s.report(ctx, o)
	}()
	end := start.Add(to.MaxRun)
	if d, ok := ctx.Deadline(); ok && d.Add(-s.opts.DeadlineMargin).Before(end) {
		end = d.Add(-s.opts.DeadlineMargin)
	}
	owner := newTaskID()
	take := func(r *TaskRecord, now time.Time) bool {
		if r.Status != TaskWorking || r.Owner != "" && !leaseLapsed(r, now) {
			return false // ended, waiting, or held: by another worker, or by this one already
		}
		if failIfOutOfRuns(r, to) {
			return true
		}
		r.Owner, r.Attempts, r.LeaseUntil = owner, r.Attempts+1, end.Add(s.opts.DeadlineMargin)
		return true
	}
	w := &taskWriter{store: to.Store, id: id}
	rec, err := w.mutate(ctx, take)
	// A take that failed may have landed (its acknowledgement lost): try
	// again, a few times, rather than leave the task held by this worker
	// for its whole lease.
	for backoff := 50 * time.Millisecond; err != nil && !errors.Is(err, ErrNoTask) && backoff <= 400*time.Millisecond; backoff *= 2 {
		if sleep(ctx, backoff) != nil {
			break
		}
		rec, err = w.mutate(ctx, take)
	}
	switch {
	case errors.Is(err, ErrNoTask):
		o.Kind = "task_not_taken"
		return nil
	case err != nil:
		o.Fault, o.Kind, o.Err = true, mcperr.DependencyFailure.String(), fmt.Errorf("taking the task: %w", err)
		return o.Err
	case rec.Owner != owner:
		o.Kind = "task_not_taken"
		return nil
	}
	o.Target = rec.Tool
	finish := s.runTaskHandler(ctx, o, rec, end)
	return s.recordOutcome(ctx, o, rec, finish)
}

// recordOutcome writes the outcome of the run of taken, the record as its
// worker took it, fenced by the worker's token: the task must still be
// held by it (heldBy). A store that fails is tried again until the worker's
// lease ends, so that a handler that completed is not run again because
// one write failed; a record that cannot be stored because of its size
// fails the task at once, saying so. After the lease the task is another
// worker's to take, and the outcome is given up (a fault).
func (s *Server) recordOutcome(ctx context.Context, o *Outcome, taken *TaskRecord, finish func(*TaskRecord)) error {
	wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), taken.LeaseUntil)
	defer cancel()
	backoff, shrunk := 20*time.Millisecond, false
	// One writer for every try: an outcome that failed to be acknowledged
	// may have landed, and is then found as this worker's, not another's.
	w := &taskWriter{store: s.tasks.Store, id: taken.ID}
	for {
		_, err := w.mutate(wctx, func(r *TaskRecord, _ time.Time) bool {
			if !heldBy(r, taken) {
				// Cancelled meanwhile, or taken over: its outcome stands.
				if r.Status == TaskCancelled {
					o.Kind = "task_cancelled"
				} else {
					o.Kind = "task_taken_over"
				}
				return false
			}
			finish(r)
			return true
		})
		switch {
		case err == nil, errors.Is(err, ErrNoTask):
			return nil
		case errors.Is(err, ErrTaskTooLarge) && !shrunk:
			// Permanent: the same write never fits. A failure does.
			finish, shrunk = resultTooLarge(o, err), true
			continue
		case errors.Is(err, ErrTaskTooLarge):
			o.Fault, o.Kind, o.Err = true, "task_outcome_lost", fmt.Errorf("recording the task's failure: %w", err)
			return o.Err
		}
		if sleep(wctx, backoff) != nil {
			o.Fault, o.Kind, o.Err = true, "task_outcome_lost", fmt.Errorf("recording the task's outcome before the worker's lease ended: %w", err)
			return o.Err
		}
		backoff = min(2*backoff, time.Second)
	}
}

// runTaskHandler runs the handler of the task rec, which this worker holds, and
// returns how its outcome changes the record.
func (s *Server) runTaskHandler(ctx context.Context, o *Outcome, rec *TaskRecord, end time.Time) func(*TaskRecord) {
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
	go s.watchTask(hctx, rec, &cancelled, cancel)
	run := &TaskRun{ID: rec.ID, Attempt: rec.Attempts}
	h := func(ctx context.Context, req *ToolRequest) (*CallToolResult, error) {
		req.Task = run
		return t.handler(ctx, req)
	}
	handlerStart := time.Now()
	r, returned := x.runTool(hctx, t, rec.Arguments, h)
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
	resp := x.toolOutcome(hctx, t, stateKey{}, r.res, r.err)
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
		return resultTooLarge(o, fmt.Errorf("the task's result is %d bytes, more than a task keeps (%d)", len(x.res.obj), maxTaskResult))
	}
	result := slices.Clone(x.res.obj)
	return func(r *TaskRecord) {
		r.Status, r.Result, r.Error, r.Owner, r.Message = TaskCompleted, result, nil, "", ""
		r.forgetCall()
	}
}

// resultTooLarge is the outcome of a run whose result a task cannot keep:
// the task fails, once, saying so; the handler is not run again.
func resultTooLarge(o *Outcome, cause error) func(*TaskRecord) {
	e := mcperr.Wrap(mcperr.Internal, cause).WithData(map[string]any{"reason": "task_result_too_large", "maxBytes": maxTaskResult})
	return failWith(o, e, "The task's result is too large to keep.")
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
	size := len(ir.State)
	for k, b := range reqs {
		if k == "" || len(k) > maxTaskInputKey {
			return failWith(o, mcperr.Wrap(mcperr.Internal, fmt.Errorf("a task's input request key of %d bytes (1 to %d)", len(k), maxTaskInputKey)).
				WithData(map[string]any{"reason": "task_input_key_invalid"}), "The task asked for input under a key it cannot keep.")
		}
		size += len(k) + len(b) + taskEntryBytes
	}
	if size > maxTaskInput {
		return failWith(o, mcperr.Wrap(mcperr.Internal, fmt.Errorf("a task's input round of %d bytes (requests and state) is more than a task keeps (%d)", size, maxTaskInput)).
			WithData(map[string]any{"reason": "task_input_too_large", "maxBytes": maxTaskInput}), "The task's input requests are too large to keep.")
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

// sleep waits d, or less when ctx ends first, which it reports.
func sleep(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
