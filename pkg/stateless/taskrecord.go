package stateless

// The task record: how it changes (one versioned write per transition),
// how it is shown, and the bounds that keep it one store item.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// A task is one store item (DynamoDB's are at most 400 KB): the call it
// keeps and the result it records are bounded so that the item fits.
const (
	maxTaskCall   = 64 << 10  // arguments, state and answers, when created
	maxTaskResult = 200 << 10 // the result object
)

// maxTaskAnswers bounds the answers a task keeps, in all: a task is one
// store item (DynamoDB's are at most 400 KB), and its result needs room.
const maxTaskAnswers = 128 << 10

// maxTaskRetries bounds the read-modify-write rounds of one transition
// that lose to concurrent writers.
const maxTaskRetries = 16

// mutateTask applies change to the task with id, read-modify-write with
// the store's version check, retrying when another writer came between.
// change reports whether it changed the record (it is then written, with
// the version and UpdatedAt advanced); it must only read the record. It
// returns the record as written or as read when unchanged.
func mutateTask(ctx context.Context, store TaskStore, id string, change func(r *TaskRecord, now time.Time) bool) (*TaskRecord, error) {
	for range maxTaskRetries {
		rec, err := store.Load(ctx, id)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		prev := rec.Version
		if !change(rec, now) {
			return rec, nil
		}
		rec.Version = prev + 1
		if !now.After(rec.UpdatedAt) {
			now = rec.UpdatedAt.Add(time.Millisecond)
		}
		rec.UpdatedAt = now
		switch err := store.Replace(ctx, rec, prev); {
		case err == nil:
			return rec, nil
		case !errors.Is(err, ErrTaskConflict):
			return nil, err
		}
	}
	return nil, fmt.Errorf("updating a task: %d writers in a row came between a read and its write", maxTaskRetries)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// failIfOutOfRuns fails r when its workers have started MaxAttempts runs
// (each one's lease lapsed, or it would not be asked): whoever finds it so
// — a worker taking it, tasks/get re-driving it — ends it the same way.
func failIfOutOfRuns(r *TaskRecord, to *TaskOptions) bool {
	if r.Attempts < to.MaxAttempts {
		return false
	}
	failTask(r, mcperr.Wrap(mcperr.Internal, nil), "The task's worker stopped "+strconv.Itoa(r.Attempts)+" times.")
	return true
}

// failTask makes r failed with the JSON-RPC error of e; message is its
// statusMessage, for people.
func failTask(r *TaskRecord, e *mcperr.Error, message string) {
	b, err := json.Marshal(e.Wire())
	if err != nil {
		b = []byte(`{"code":-32603,"message":"Internal error"}`)
	}
	r.Status, r.Error, r.Result, r.Requests, r.Owner, r.Message = TaskFailed, b, nil, nil, "", message
}

// appendTask appends the task as the wire has it: the Task members, and
// with detailed the status's own (inputRequests, result or error), as
// tasks/get answers; without, as a CreateTaskResult.
func appendTask(dst []byte, to *TaskOptions, r *TaskRecord, detailed bool) []byte {
	dst = append(dst, `{"taskId":`...)
	dst = appendString(dst, r.ID)
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, string(r.Status))
	if r.Message != "" {
		dst = append(dst, `,"statusMessage":`...)
		dst = appendString(dst, r.Message)
	}
	dst = append(dst, `,"createdAt":"`...)
	dst = r.CreatedAt.UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z")
	dst = append(dst, `","lastUpdatedAt":"`...)
	dst = r.UpdatedAt.UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z")
	dst = append(dst, `","ttlMs":`...)
	dst = strconv.AppendInt(dst, r.ExpiresAt.Sub(r.CreatedAt).Milliseconds(), 10)
	dst = append(dst, `,"pollIntervalMs":`...)
	dst = strconv.AppendInt(dst, max(1, to.PollInterval.Milliseconds()), 10)
	if detailed {
		switch r.Status {
		case TaskInputRequired:
			dst = append(dst, `,"inputRequests":{`...)
			first := true
			for _, k := range sortedKeys(r.Requests) {
				if !first {
					dst = append(dst, ',')
				}
				first = false
				dst = appendString(dst, k)
				dst = append(dst, ':')
				dst = append(dst, r.Requests[k]...)
			}
			dst = append(dst, '}')
		case TaskCompleted:
			dst = append(dst, `,"result":`...)
			dst = append(dst, r.Result...)
		case TaskFailed:
			dst = append(dst, `,"error":`...)
			dst = append(dst, r.Error...)
		}
	}
	return append(dst, '}')
}

// taskIDShaped reports whether id could be one of this server's task ids
// (newTaskID's base64url), up to 128 characters for ids of a store's own.
func taskIDShaped(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// failWith records e on the outcome and returns the change that fails the
// task with it.
func failWith(o *Outcome, e *mcperr.Error, message string) func(*TaskRecord) {
	o.Code, o.Kind = e.Code(), e.Kind().String()
	if e.ServerFault() {
		o.Fault = true
	}
	if o.Err == nil {
		o.Err = e.Unwrap()
	}
	return func(r *TaskRecord) { failTask(r, e, message) }
}

// watchTask reads the task every CancelCheck while its handler runs, and
// cancels the handler when the task was cancelled or is no longer this
// worker's.
func watchTask(s *Server, ctx context.Context, id, owner string, cancelled *atomic.Bool, cancel context.CancelFunc) {
	tick := time.NewTicker(s.tasks.CancelCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r, err := s.tasks.Store.Load(ctx, id)
		if errors.Is(err, ErrNoTask) || err == nil && (r.Status != TaskWorking || r.Owner != owner) {
			cancelled.Store(true)
			cancel()
			return
		}
	}
}
