package tasks

// The extension's methods: tasks/get, tasks/update and tasks/cancel,
// served as the server's own (stateless.AddMethod).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// taskParams are tasks/get's and tasks/cancel's.
type taskParams struct {
	TaskID *string `json:"taskId"`
}

// updateParams are tasks/update's; the answers are kept raw, for their
// shape to be checked here.
type updateParams struct {
	TaskID         *string         `json:"taskId"`
	InputResponses json.RawMessage `json:"inputResponses"`
}

// empty is the result of tasks/update and tasks/cancel.
var empty = json.RawMessage("{}")

// missingExtension is the refusal of a request that needs the tasks
// extension from a client that did not declare it.
func missingExtension() *mcperr.Error {
	return mcperr.NewMissingCapability(map[string]any{"extensions": map[string]any{stateless.ExtensionTasks: map[string]any{}}})
}

// own loads the task with id for the request's caller. A task of another
// principal answers exactly as one that does not exist.
func (x *Extension) own(ctx context.Context, req *stateless.MethodRequest, id *string) (*Record, *mcperr.Error) {
	if !req.Declares(stateless.ExtensionTasks) {
		return nil, missingExtension()
	}
	if id == nil {
		return nil, mcperr.New(mcperr.KindMalformedParams)
	}
	if !idShaped(*id) {
		// Never this server's: not worth a read, and a store that
		// refuses an odd key must not count as a fault.
		return nil, mcperr.New(mcperr.KindUnknownTask)
	}
	rec, err := x.opts.Store.Load(ctx, *id)
	switch {
	case errors.Is(err, ErrNoTask):
		return nil, mcperr.New(mcperr.KindUnknownTask)
	case err != nil:
		return nil, mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, fmt.Errorf("loading the task: %w", err))
	case rec.Principal != req.Principal || !time.Now().Before(rec.ExpiresAt):
		return nil, mcperr.New(mcperr.KindUnknownTask)
	}
	req.Note(stateless.Note{Target: rec.Tool})
	return rec, nil
}

// get answers tasks/get with the task as it stands. A working task whose
// worker never came or died (its lease lapsed) is dispatched again first,
// or failed once it has used its attempts.
func (x *Extension) get(ctx context.Context, req *stateless.MethodRequest, p taskParams) (json.RawMessage, error) {
	rec, e := x.own(ctx, req, p.TaskID)
	if e != nil {
		return nil, e
	}
	if rec.Status == StatusWorking && leaseLapsed(rec, time.Now()) {
		if r, err := x.redrive(ctx, rec.ID); err == nil && r != nil {
			rec = r
		} else if err != nil {
			req.Note(stateless.Note{Fault: err})
		}
	}
	return appendTask(nil, x.opts, rec, true), nil
}

// redrive takes a working task whose lease lapsed back for a new worker
// and dispatches it, or fails it when its runs are used up. It returns
// the record as it left it, or nil when another request changed it first.
func (x *Extension) redrive(ctx context.Context, id string) (*Record, error) {
	to := x.opts
	dispatch := false
	rec, err := mutate(ctx, to.Store, id, func(r *Record, now time.Time) bool {
		if r.Status != StatusWorking || !leaseLapsed(r, now) {
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
		if err := x.dispatch(ctx, id); err != nil {
			return rec, fmt.Errorf("dispatching task again: %w", err)
		}
	}
	return rec, nil
}

// update stores the answers to the task's outstanding input requests and,
// once none is outstanding, hands it to a worker again. Answers to other
// keys are ignored, as the extension asks.
func (x *Extension) update(ctx context.Context, req *stateless.MethodRequest, p updateParams) (json.RawMessage, error) {
	responses, err := parseResponses(p.InputResponses)
	if err != nil {
		return nil, mcperr.Wrap(mcperr.KindMalformedParams, err)
	}
	rec, e := x.own(ctx, req, p.TaskID)
	if e != nil {
		return nil, e
	}
	to := x.opts
	wake, tooLarge := false, false
	_, err = mutate(ctx, to.Store, rec.ID, func(r *Record, now time.Time) bool {
		wake, tooLarge = false, false
		if r.Status == StatusWorking && r.Owner == "" && answered(r, responses) {
			// A retry of the update that woke the task, whose answer
			// was lost: hand it out again (a second delivery is fenced).
			wake = true
			return false
		}
		if r.Status != StatusInputRequired {
			return false
		}
		size := 0
		for k, v := range r.Responses {
			size += len(k) + len(v) + entryBytes
		}
		for k, v := range responses {
			if _, ok := r.Requests[k]; ok {
				size += len(k) + len(v) + entryBytes
			}
		}
		if size > maxAnswers {
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
			r.Status, r.Requests, r.Owner = StatusWorking, nil, ""
			r.LeaseUntil = now.Add(to.DispatchGrace)
			wake = true
		}
		return changed
	})
	if err != nil {
		return nil, writeRefusal(err)
	}
	if tooLarge {
		return nil, mcperr.Wrap(mcperr.KindMalformedParams, fmt.Errorf("a task's answers are limited to %d bytes in all", maxAnswers)).
			WithData(map[string]any{"reason": "task_answers_too_large", "maxBytes": maxAnswers})
	}
	if wake {
		if err := x.dispatch(ctx, rec.ID); err != nil {
			// Stored: the next tasks/get dispatches it after the grace.
			req.Note(stateless.Note{Fault: fmt.Errorf("dispatching the task after its input: %w", err)})
		}
	}
	return empty, nil
}

// parseResponses reads tasks/update's inputResponses: an object whose
// members are objects, each kept as sent.
func parseResponses(raw json.RawMessage) (map[string]json.RawMessage, error) {
	errShape := errors.New("inputResponses must be an object of objects")
	var m map[string]json.RawMessage
	// Read as strictly as every request is (package stateless): a name
	// twice, or bytes that are not UTF-8, are refused.
	if len(bytes.TrimSpace(raw)) == 0 || jsonv2.Unmarshal(raw, &m) != nil || m == nil {
		return nil, errShape
	}
	for _, v := range m {
		if v = bytes.TrimSpace(v); len(v) == 0 || v[0] != '{' {
			return nil, errShape
		}
	}
	return m, nil
}

// answered reports whether every one of responses is stored in r as it
// is, and there is at least one: an update r has taken already.
func answered(r *Record, responses map[string]json.RawMessage) bool {
	for k, v := range responses {
		if got, ok := r.Responses[k]; !ok || !bytes.Equal(got, v) {
			return false
		}
	}
	return len(responses) > 0
}

// cancel marks a task that has not ended cancelled; a running worker sees
// it and cancels its handler's context. A task that ended keeps its
// outcome, and the acknowledgement is the same.
func (x *Extension) cancel(ctx context.Context, req *stateless.MethodRequest, p taskParams) (json.RawMessage, error) {
	rec, e := x.own(ctx, req, p.TaskID)
	if e != nil {
		return nil, e
	}
	_, err := mutate(ctx, x.opts.Store, rec.ID, func(r *Record, now time.Time) bool {
		if r.Status.Terminal() {
			return false
		}
		r.Status, r.Owner, r.Message = StatusCancelled, "", "Cancelled by the client."
		r.forgetCall()
		return true
	})
	if err != nil {
		return nil, writeRefusal(err)
	}
	return empty, nil
}

// writeRefusal is the refusal of a request whose write of its task
// failed: a record too large is the request's to fix and never
// retryable; a task gone meanwhile (expired) is unknown; anything else is
// the store's failure, which a retry may get past.
func writeRefusal(err error) *mcperr.Error {
	switch {
	case errors.Is(err, ErrTooLarge):
		return mcperr.Wrap(mcperr.KindMalformedParams, err).WithData(map[string]any{"reason": "task_too_large", "maxBytes": MaxRecordBytes})
	case errors.Is(err, ErrNoTask):
		return mcperr.New(mcperr.KindUnknownTask)
	}
	return mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, err)
}
