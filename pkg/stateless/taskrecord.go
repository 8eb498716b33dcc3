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

// A task is one store item (DynamoDB's are at most 400 KB). Its parts
// are bounded so that every record the server writes is at most
// MaxTaskRecordBytes as stored: while the task may still run, it keeps
// its call, its answers and its outstanding input requests (at most 64 +
// 128 + 96 KiB, and the keys it asked); once it has ended it keeps only
// its outcome (a result of at most 320 KiB), with the principal, tool and
// key it was created with (at most 64 KiB, as they were part of the call).
const (
	// maxTaskCall bounds the record a call creates: its arguments,
	// capabilities, request state and answers, principal and key.
	maxTaskCall = 64 << 10
	// maxTaskAnswers bounds the answers a task keeps over its life.
	maxTaskAnswers = 128 << 10
	// maxTaskInput bounds one input round of a task's handler: its
	// requests and the state it keeps for the next run.
	maxTaskInput = 96 << 10
	// maxTaskInputKey bounds the key of a task's input request: a
	// store keeps keys as names (DynamoDB's map element names).
	maxTaskInputKey = 1 << 10
	// maxTaskResult bounds the result object of a completed task, as it
	// is encoded (a character JSON escapes counts as its escape).
	maxTaskResult = 320 << 10
)

// MaxTaskRecordBytes bounds a task record's [TaskRecord.StoredSize]: the
// server writes no record larger (the bounds above keep every transition
// within it), and a TaskStore must keep any record up to it. DynamoDB's
// 400 KB item holds one with room for the attribute names, numbers and
// key of package tasks' item.
const MaxTaskRecordBytes = 384 << 10

// taskEntryBytes is what StoredSize counts for each entry of a record's
// maps and lists besides its key and value: a store's per-element
// overhead (DynamoDB counts one byte per element of a map or list).
const taskEntryBytes = 4

// StoredSize is the size a store may take to keep r: the bytes of its
// strings and raw JSON and binary members as they are (a store keeps them
// so, never escaped or re-encoded), and taskEntryBytes for each entry of
// its maps and lists. Fixed-size members (numbers, times, flags) are not
// counted: a store's item adds at most a fixed amount for them.
func (r *TaskRecord) StoredSize() int {
	n := len(r.ID) + len(r.Principal) + len(r.Tool) + len(r.Status) + len(r.Message) +
		len(r.ProtocolVersion) + len(r.IdempotencyKey) + len(r.Owner) +
		len(r.Arguments) + len(r.Capabilities) + len(r.State) + len(r.Result) + len(r.Error)
	for k, v := range r.Responses {
		n += len(k) + len(v) + taskEntryBytes
	}
	for k, v := range r.Requests {
		n += len(k) + len(v) + taskEntryBytes
	}
	for _, k := range r.Asked {
		n += len(k) + taskEntryBytes
	}
	return n
}

// ErrTaskTooLarge is returned, wrapped, by a TaskStore that cannot keep a
// record because of its size, and by the server for a transition that
// would take a record over MaxTaskRecordBytes. It is permanent: the same
// write never succeeds.
var ErrTaskTooLarge = errors.New("stateless: task record too large to store")

// maxTaskRetries bounds the read-modify-write rounds of one transition
// that lose to concurrent writers.
const maxTaskRetries = 16

// mutateTask applies change to the task with id: one transition, written
// by a taskWriter of its own.
func mutateTask(ctx context.Context, store TaskStore, id string, change func(r *TaskRecord, now time.Time) bool) (*TaskRecord, error) {
	return (&taskWriter{store: store, id: id}).mutate(ctx, change)
}

// taskWriter writes the transitions of one task, read-modify-write with
// the store's version check. It remembers the last record it sent: a
// write whose acknowledgement was lost may still have landed (a store
// client that retries it then meets its own write as a conflict, or the
// caller sees a failure and tries again), and a record read back with the
// very version and update time it sent is that write. A caller that
// retries a transition after a failure keeps one writer for all its
// tries, so that a write that landed is never taken for another's.
type taskWriter struct {
	store TaskStore
	id    string
	sent  *TaskRecord
}

// mutate applies change, retrying when another writer came between a
// read and its write. change reports whether it changed the record (it
// is then written, with the version and UpdatedAt advanced); it must only
// read the record. It returns the record as written, as read when
// unchanged, or as this writer's earlier write left it.
func (w *taskWriter) mutate(ctx context.Context, change func(r *TaskRecord, now time.Time) bool) (*TaskRecord, error) {
	for range maxTaskRetries {
		rec, err := w.store.Load(ctx, w.id)
		if err != nil {
			return nil, err
		}
		if w.sent != nil && sameWrite(rec, w.sent) {
			return rec, nil
		}
		now := time.Now()
		prev := rec.Version
		if !change(rec, now) {
			return rec, nil
		}
		if n := rec.StoredSize(); n > MaxTaskRecordBytes {
			return nil, fmt.Errorf("updating a task: the record would be %d bytes, more than %d: %w", n, MaxTaskRecordBytes, ErrTaskTooLarge)
		}
		rec.Version = prev + 1
		if !now.After(rec.UpdatedAt) {
			now = rec.UpdatedAt.Add(time.Millisecond)
		}
		rec.UpdatedAt = now
		w.sent = rec
		switch err := w.store.Replace(ctx, rec, prev); {
		case err == nil:
			return rec, nil
		case !errors.Is(err, ErrTaskConflict):
			return nil, err
		}
	}
	return nil, fmt.Errorf("updating a task: %d writers in a row came between a read and its write", maxTaskRetries)
}

// leaseSkew is how long after a lease's end another request may take the
// task over. A worker writes its outcome only before its lease ends (by
// its own clock), so a write that was sent in time lands before anyone
// else may move the task, across instances whose clocks differ by less.
const leaseSkew = 2 * time.Second

// leaseLapsed reports whether r's lease (a worker's, or a dispatch's
// grace) has ended, skew included, at now.
func leaseLapsed(r *TaskRecord, now time.Time) bool {
	return now.After(r.LeaseUntil.Add(leaseSkew))
}

// sameWrite reports whether stored is the record written as sent: the
// same version, written at the same instant (every write advances both,
// and the instant is the writer's own clock reading).
func sameWrite(stored, sent *TaskRecord) bool {
	return stored.Version == sent.Version && stored.UpdatedAt.Equal(sent.UpdatedAt)
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
	r.Status, r.Error, r.Result, r.Owner, r.Message = TaskFailed, b, nil, "", message
	r.forgetCall()
}

// forgetCall drops from r, which has ended, what only a run needs: the
// call (arguments, capabilities, state), the answers, the input requests
// and the keys asked. An ended task never runs again; it keeps its
// outcome and what names it (principal, tool, version, key), so that its
// record has all its room for the result.
func (r *TaskRecord) forgetCall() {
	r.Arguments, r.Capabilities, r.State, r.HasState = nil, nil, nil, false
	r.Responses, r.Requests, r.Asked = nil, nil, nil
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

// heldBy reports whether r is still the run's of the worker that took it
// as taken: working, and owned by that worker, or let go by a re-drive
// that no other worker took up since (its runs unchanged).
func heldBy(r, taken *TaskRecord) bool {
	return r.Status == TaskWorking && (r.Owner == taken.Owner || r.Owner == "" && r.Attempts == taken.Attempts)
}

// watchTask reads the task every CancelCheck while its handler runs, and
// cancels the handler when the task was cancelled or is no longer this
// worker's (see heldBy).
func (s *Server) watchTask(ctx context.Context, taken *TaskRecord, cancelled *atomic.Bool, cancel context.CancelFunc) {
	tick := time.NewTicker(s.tasks.CancelCheck)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		r, err := s.tasks.Store.Load(ctx, taken.ID)
		if errors.Is(err, ErrNoTask) || err == nil && !heldBy(r, taken) {
			cancelled.Store(true)
			cancel()
			return
		}
	}
}
