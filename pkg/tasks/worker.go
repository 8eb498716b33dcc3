package tasks

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
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Run is a task's worker: it takes the task with id, runs its tool's
// handler with the task's call (Server.Invoke), and records the outcome —
// completed with the result (isError results included), failed with a
// JSON-RPC error, input_required with the handler's input requests —
// unless the task was cancelled meanwhile, which cancels the handler's
// context.
//
// Taking the task is a versioned write that succeeds for one worker only:
// a duplicate delivery, or a worker arriving while another holds the
// task's lease, does nothing and returns nil. So does a task that ended,
// waits for input, or is gone. The handler runs until ctx's deadline less
// the server's DeadlineMargin (on Lambda, the invocation's), at most
// Options.MaxRun; a task whose handler is still running then fails with a
// Timeout. The outcome's write is tried again while the store fails,
// until the worker's lease ends (see recordOutcome), so that a handler
// that completed is not run again for one failed write. A worker that
// dies holds the task until its lease lapses (and the skew allowed between
// clocks), and the next tasks/get dispatches it again.
//
// It returns an error only when the store could not be read or written
// (the caller may retry: Lambda retries an asynchronous invocation), or
// when the extension serves no server.
func (x *Extension) Run(ctx context.Context, id string) error {
	srv, to := x.srv, x.opts
	if srv == nil {
		return errNotServing
	}
	start := time.Now()
	o := &stateless.Outcome{Method: stateless.MethodTaskRun, TaskRun: true, Version: stateless.Version20260728}
	defer func() {
		o.Duration = time.Since(start)
		srv.Report(ctx, o)
	}()
	margin := srv.DeadlineMargin()
	end := start.Add(to.MaxRun)
	if d, ok := ctx.Deadline(); ok && d.Add(-margin).Before(end) {
		end = d.Add(-margin)
	}
	owner := newID()
	take := func(r *Record, now time.Time) bool {
		if r.Status != StatusWorking || r.Owner != "" && !leaseLapsed(r, now) {
			return false // ended, waiting, or held: by another worker, or by this one already
		}
		if failIfOutOfRuns(r, to) {
			return true
		}
		r.Owner, r.Attempts, r.LeaseUntil = owner, r.Attempts+1, end.Add(margin)
		return true
	}
	w := &writer{store: to.Store, id: id}
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
		o.Fault, o.Kind, o.Err = true, mcperr.KindDependencyFailure.String(), fmt.Errorf("taking the task: %w", err)
		return o.Err
	case rec.Owner != owner:
		o.Kind = "task_not_taken"
		return nil
	}
	o.Target = rec.Tool
	finish := x.runHandler(ctx, o, rec, end)
	return x.recordOutcome(ctx, o, rec, finish)
}

// recordOutcome writes the outcome of the run of taken, the record as its
// worker took it, fenced by the worker's token: the task must still be
// held by it (heldBy). A store that fails is tried again until the worker's
// lease ends, so that a handler that completed is not run again because
// one write failed; a record that cannot be stored because of its size
// fails the task at once, saying so. After the lease the task is another
// worker's to take, and the outcome is given up (a fault).
func (x *Extension) recordOutcome(ctx context.Context, o *stateless.Outcome, taken *Record, finish func(*Record)) error {
	wctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), taken.LeaseUntil)
	defer cancel()
	backoff, shrunk := 20*time.Millisecond, false
	// One writer for every try: an outcome that failed to be acknowledged
	// may have landed, and is then found as this worker's, not another's.
	w := &writer{store: x.opts.Store, id: taken.ID}
	for {
		_, err := w.mutate(wctx, func(r *Record, _ time.Time) bool {
			if !heldBy(r, taken) {
				// Cancelled meanwhile, or taken over: its outcome stands.
				if r.Status == StatusCancelled {
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
		case errors.Is(err, ErrTooLarge) && !shrunk:
			// Permanent: the same write never fits. A failure does.
			finish, shrunk = resultTooLarge(o, err), true
			continue
		case errors.Is(err, ErrTooLarge):
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

// runHandler runs the handler of the task rec, which this worker holds,
// and returns how its outcome changes the record.
func (x *Extension) runHandler(ctx context.Context, o *stateless.Outcome, rec *Record, end time.Time) func(*Record) {
	hctx, cancel := context.WithDeadline(ctx, end)
	defer cancel()
	var cancelled atomic.Bool
	go x.watch(hctx, rec, &cancelled, cancel)
	got, err := x.srv.Invoke(hctx, &stateless.Invocation{
		Tool: rec.Tool, Principal: rec.Principal, ProtocolVersion: rec.ProtocolVersion, IdempotencyKey: rec.IdempotencyKey,
		Capabilities: rec.Capabilities, Arguments: rec.Arguments, InputResponses: rec.Responses, State: rec.State, HasState: rec.HasState,
		Task: &stateless.TaskRun{ID: rec.ID, Attempt: rec.Attempts}, Outcome: o,
	})
	switch {
	case errors.Is(err, stateless.ErrNoTool):
		return failWith(o, mcperr.Wrap(mcperr.KindInternal, errors.New("the task's tool is no longer registered")), "The task's tool is gone.")
	case err != nil:
		return failWith(o, mcperr.Wrap(mcperr.KindInternal, err), "The task's tool cannot run.")
	case cancelled.Load():
		o.Kind = "task_cancelled"
		return func(*Record) {}
	case got.Abandoned:
		return failWith(o, mcperr.NewRetryable(mcperr.KindTimeout, 0, errors.New("the task's handler did not return before its run's end")), "The task did not finish in the time a run has.")
	case got.Input != nil:
		return inputRound(o, got.Input)
	case got.Refusal != nil && got.Refusal.Kind() == mcperr.KindMissingCapability:
		return failWith(o, got.Refusal, "The task needs input the client cannot give.")
	case got.Refusal != nil:
		return failWith(o, got.Refusal, "The task failed.")
	case len(got.Result) > maxResult:
		return resultTooLarge(o, fmt.Errorf("the task's result is %d bytes, more than a task keeps (%d)", len(got.Result), maxResult))
	}
	result := got.Result
	return func(r *Record) {
		r.Status, r.Result, r.Error, r.Owner, r.Message = StatusCompleted, result, nil, "", ""
		r.forgetCall()
	}
}

// resultTooLarge is the outcome of a run whose result a task cannot keep:
// the task fails, once, saying so; the handler is not run again.
func resultTooLarge(o *stateless.Outcome, cause error) func(*Record) {
	e := mcperr.Wrap(mcperr.KindInternal, cause).WithData(map[string]any{"reason": "task_result_too_large", "maxBytes": maxResult})
	return failWith(o, e, "The task's result is too large to keep.")
}

// inputRound is the outcome of a run that asks for input: the task waits
// for it, with the requests outstanding and the handler's state kept in
// the record (server-side: it needs no seal). Keys are unique over the
// task's life; the client declared, when it called, the capability each
// request needs (Server.Invoke refuses it otherwise).
func inputRound(o *stateless.Outcome, ir *stateless.InputRequired) func(*Record) {
	if len(ir.Requests) == 0 {
		return failWith(o, mcperr.Wrap(mcperr.KindInternal, errors.New("handler returned InputRequired with no requests in a task")), "The task failed.")
	}
	reqs := make(map[string]json.RawMessage, len(ir.Requests))
	size := len(ir.State)
	for k, r := range ir.Requests {
		b, err := json.Marshal(r)
		if err != nil {
			return failWith(o, mcperr.Wrap(mcperr.KindInternal, err), "The task failed.")
		}
		if k == "" || len(k) > maxInputKey {
			return failWith(o, mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("a task's input request key of %d bytes (1 to %d)", len(k), maxInputKey)).
				WithData(map[string]any{"reason": "task_input_key_invalid"}), "The task asked for input under a key it cannot keep.")
		}
		reqs[k] = b
		size += len(k) + len(b) + entryBytes
	}
	if size > maxInput {
		return failWith(o, mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("a task's input round of %d bytes (requests and state) is more than a task keeps (%d)", size, maxInput)).
			WithData(map[string]any{"reason": "task_input_too_large", "maxBytes": maxInput}), "The task's input requests are too large to keep.")
	}
	o.Kind = "input_required"
	return func(r *Record) {
		for k := range reqs {
			if slices.Contains(r.Asked, k) {
				failTask(r, mcperr.Wrap(mcperr.KindInternal, nil), "The task asked for input under a key it had used.")
				o.Fault, o.Err = true, errors.New("a task's handler reused an input request key")
				return
			}
		}
		r.Status, r.Requests, r.Owner, r.Message = StatusInputRequired, reqs, "", "Waiting for input."
		r.Asked = append(r.Asked, sortedKeys(reqs)...)
		r.State, r.HasState = ir.State, ir.State != nil
		r.Attempts = 0 // the run ended: the next is a new round's
	}
}

// watch reads the task every CancelCheck while its handler runs, and
// cancels the handler when the task was cancelled or is no longer this
// worker's (see heldBy).
func (x *Extension) watch(ctx context.Context, taken *Record, cancelled *atomic.Bool, cancel context.CancelFunc) {
	tick := time.NewTicker(x.opts.CancelCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r, err := x.opts.Store.Load(ctx, taken.ID)
		if errors.Is(err, ErrNoTask) || err == nil && !heldBy(r, taken) {
			cancelled.Store(true)
			cancel()
			return
		}
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
