package stateless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// taskParams are tasks/get's and tasks/cancel's.
type taskParams struct {
	baseParams
	TaskID *string `json:"taskId"`
}

func (p *taskParams) target() *string { return p.TaskID }

// updateTaskParams are tasks/update's.
type updateTaskParams struct {
	taskParams
	InputResponses jsontext.Value `json:"inputResponses"`
}

// missingTasksExtension is the refusal of a request that needs the tasks
// extension from a client that did not declare it.
func missingTasksExtension() *mcperr.Error {
	return mcperr.NewMissingCapability(map[string]any{"extensions": map[string]any{ExtensionTasks: map[string]any{}}})
}

// declaresTasks reports whether the request's client capabilities declare
// the tasks extension.
func declaresTasks(c *Call) bool {
	v, ok := c.Capabilities().Extensions[ExtensionTasks]
	return ok && len(v) > 0 && string(v) != "null"
}

// ownTask loads the task a tasks/* request names, for its caller. A task
// of another principal answers exactly as one that does not exist.
func (x *exchange) ownTask(ctx context.Context) (*TaskRecord, *mcperr.Error) {
	if !declaresTasks(&x.call) {
		return nil, missingTasksExtension()
	}
	id := x.d.params.target()
	if id == nil {
		return nil, mcperr.New(mcperr.MalformedParams)
	}
	if !taskIDShaped(*id) {
		// Never this server's: not worth a read, and a store that
		// refuses an odd key must not count as a fault.
		return nil, mcperr.New(mcperr.UnknownTask)
	}
	rec, err := x.s.tasks.Store.Load(ctx, *id)
	switch {
	case errors.Is(err, ErrNoTask):
		return nil, mcperr.New(mcperr.UnknownTask)
	case err != nil:
		return nil, mcperr.NewRetryable(mcperr.DependencyFailure, time.Second, fmt.Errorf("loading the task: %w", err))
	case rec.Principal != x.call.Principal || !time.Now().Before(rec.ExpiresAt):
		return nil, mcperr.New(mcperr.UnknownTask)
	}
	x.o.Target = rec.Tool
	return rec, nil
}

// serveGetTask answers tasks/get with the task as it stands. A working
// task whose worker never came or died (its lease lapsed) is dispatched
// again first, or failed once it has used its attempts.
func (x *exchange) serveGetTask(ctx context.Context, _ *taskParams) *Response {
	rec, e := x.ownTask(ctx)
	if e != nil {
		return x.refuse(x.d.id, e)
	}
	if rec.Status == TaskWorking && leaseLapsed(rec, time.Now()) {
		if r, err := x.s.redrive(ctx, rec.ID); err == nil && r != nil {
			rec = r
		} else if err != nil {
			x.o.Fault, x.o.Err = true, err
		}
	}
	return x.result(preEncoded(appendTask(nil, x.s.tasks, rec, true)), &resultFields{})
}

// redrive takes a working task whose lease lapsed back for a new worker
// and dispatches it, or fails it when its runs are used up. It returns
// the record as it left it, or nil when another request changed it first.
func (s *Server) redrive(ctx context.Context, id string) (*TaskRecord, error) {
	to := s.tasks
	dispatch := false
	rec, err := mutateTask(ctx, to.Store, id, func(r *TaskRecord, now time.Time) bool {
		if r.Status != TaskWorking || !leaseLapsed(r, now) {
			return false
		}
		r.Owner = ""
		if failIfOutOfRuns(r, to) {
			return true
		}
		r.LeaseUntil = now.Add(to.DispatchGrace)
		dispatch = true
		return true
	})
	if err != nil || rec == nil {
		return rec, err
	}
	if dispatch {
		if err := s.dispatchTask(ctx, id); err != nil {
			return rec, fmt.Errorf("dispatching task again: %w", err)
		}
	}
	return rec, nil
}

// serveUpdateTask stores the answers to the task's outstanding input
// requests and, once none is outstanding, hands it to a worker again.
// Answers to other keys are ignored, as the extension asks.
func (x *exchange) serveUpdateTask(ctx context.Context, p *updateTaskParams) *Response {
	responses, err := parseInputResponses(json.RawMessage(p.InputResponses))
	if err != nil || responses == nil {
		return x.refuse(x.d.id, mcperr.Wrap(mcperr.MalformedParams, errors.New("inputResponses must be an object of objects")))
	}
	rec, e := x.ownTask(ctx)
	if e != nil {
		return x.refuse(x.d.id, e)
	}
	to := x.s.tasks
	wake, tooLarge := false, false
	_, err = mutateTask(ctx, to.Store, rec.ID, func(r *TaskRecord, now time.Time) bool {
		wake, tooLarge = false, false
		if r.Status == TaskWorking && r.Owner == "" && answered(r, responses) {
			// A retry of the update that woke the task, whose answer
			// was lost: hand it out again (a second delivery is fenced).
			wake = true
			return false
		}
		if r.Status != TaskInputRequired {
			return false
		}
		size := 0
		for k, v := range r.Responses {
			size += len(k) + len(v) + taskEntryBytes
		}
		for k, v := range responses {
			if _, ok := r.Requests[k]; ok {
				size += len(k) + len(v) + taskEntryBytes
			}
		}
		if size > maxTaskAnswers {
			tooLarge = true
			return false
		}
		changed := false
		for k, v := range responses {
			if _, ok := r.Requests[k]; ok {
				if r.Responses == nil {
					r.Responses = map[string]json.RawMessage{}
				}
				r.Responses[k] = v
				delete(r.Requests, k)
				changed = true
			}
		}
		if changed && len(r.Requests) == 0 {
			r.Status, r.Requests, r.Owner = TaskWorking, nil, ""
			r.LeaseUntil = now.Add(to.DispatchGrace)
			wake = true
		}
		return changed
	})
	if err != nil {
		return x.refuse(x.d.id, taskWriteRefusal(err))
	}
	if tooLarge {
		return x.refuse(x.d.id, mcperr.Wrap(mcperr.MalformedParams, fmt.Errorf("a task's answers are limited to %d bytes in all", maxTaskAnswers)).
			WithData(map[string]any{"reason": "task_answers_too_large", "maxBytes": maxTaskAnswers}))
	}
	if wake {
		if err := x.s.dispatchTask(ctx, rec.ID); err != nil {
			// Stored: the next tasks/get dispatches it after the grace.
			x.o.Fault, x.o.Err = true, fmt.Errorf("dispatching the task after its input: %w", err)
		}
	}
	return x.result(preEncoded("{}"), &resultFields{})
}

// answered reports whether every one of responses is stored in r as it
// is, and there is at least one: an update r has taken already.
func answered(r *TaskRecord, responses map[string]json.RawMessage) bool {
	for k, v := range responses {
		if got, ok := r.Responses[k]; !ok || !bytes.Equal(got, v) {
			return false
		}
	}
	return len(responses) > 0
}

// serveCancelTask marks a task that has not ended cancelled; a running
// worker sees it and cancels its handler's context. A task that ended
// keeps its outcome, and the acknowledgement is the same.
func (x *exchange) serveCancelTask(ctx context.Context, _ *taskParams) *Response {
	rec, e := x.ownTask(ctx)
	if e != nil {
		return x.refuse(x.d.id, e)
	}
	_, err := mutateTask(ctx, x.s.tasks.Store, rec.ID, func(r *TaskRecord, now time.Time) bool {
		if r.Status.Terminal() {
			return false
		}
		r.Status, r.Owner, r.Message = TaskCancelled, "", "Cancelled by the client."
		r.forgetCall()
		return true
	})
	if err != nil {
		return x.refuse(x.d.id, taskWriteRefusal(err))
	}
	return x.result(preEncoded("{}"), &resultFields{})
}

// taskWriteRefusal is the refusal of a request whose write of its task
// failed: a record too large is the request's to fix and never
// retryable; a task gone meanwhile (expired) is unknown; anything else is
// the store's failure, which a retry may get past.
func taskWriteRefusal(err error) *mcperr.Error {
	switch {
	case errors.Is(err, ErrTaskTooLarge):
		return mcperr.Wrap(mcperr.MalformedParams, err).WithData(map[string]any{"reason": "task_too_large", "maxBytes": MaxTaskRecordBytes})
	case errors.Is(err, ErrNoTask):
		return mcperr.New(mcperr.UnknownTask)
	}
	return mcperr.NewRetryable(mcperr.DependencyFailure, time.Second, err)
}
