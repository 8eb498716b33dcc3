package tasks

// The task record: what a store keeps, how it changes (one versioned
// write per transition), how it is shown, and the bounds that keep it one
// store item.

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/canon"
	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Status is a task's status.
type Status string

// The statuses, as on the wire.
const (
	StatusWorking       Status = "working"
	StatusInputRequired Status = "input_required"
	StatusCompleted     Status = "completed"
	StatusFailed        Status = "failed"
	StatusCancelled     Status = "cancelled"
)

// Terminal reports whether s is final.
func (s Status) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusCancelled
}

// Record is a task as a Store keeps it: the call it runs, where
// it stands, and which worker holds it. Stores keep it whole and compare
// only Version; every transition is decided by the server.
type Record struct {
	ID string `json:"id"`
	// Version increases by one with every write; a store replaces a record
	// only if its stored version is the one the writer read.
	Version   int64  `json:"version"`
	Principal string `json:"principal"`
	// Quota is who the task's live-task slot is charged to, when that is
	// not Principal: an anonymous caller's address (stateless.Call.QuotaKey).
	Quota     string    `json:"quota,omitempty"`
	Tool      string    `json:"tool"`
	Status    Status    `json:"status"`
	Message   string    `json:"statusMessage,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	// ExpiresAt is CreatedAt plus the TTL: the task is gone then (a
	// DynamoDB table's TTL attribute deletes it some time later).
	ExpiresAt time.Time `json:"expiresAt"`

	// The call, as the handler sees it on every run.
	Arguments       json.RawMessage            `json:"arguments"`
	ProtocolVersion string                     `json:"protocolVersion"`
	Capabilities    json.RawMessage            `json:"capabilities,omitempty"`
	IdempotencyKey  string                     `json:"idempotencyKey,omitempty"`
	State           []byte                     `json:"state,omitempty"`
	HasState        bool                       `json:"hasState,omitempty"`
	Responses       map[string]json.RawMessage `json:"responses,omitempty"` // every answer so far
	// Requests are the outstanding input requests; Asked every key ever
	// issued, which are unique over the task's life.
	Requests map[string]json.RawMessage `json:"requests,omitempty"`
	Asked    []string                   `json:"asked,omitempty"`

	// The outcome: the result object of a completed task, the JSON-RPC
	// error of a failed one.
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`

	// The worker: Owner holds the task until LeaseUntil; Attempts counts
	// the runs started. Owner "" with a LeaseUntil is a dispatched task
	// waiting for its worker until then.
	Owner      string    `json:"owner,omitempty"`
	LeaseUntil time.Time `json:"leaseUntil"`
	Attempts   int       `json:"attempts,omitempty"`
}

// Store keeps task records. Both of package tasks' stores pass one
// contract test suite (package tasks/taskstest).
type Store interface {
	// Create stores a new record; ErrExists if its id is taken. It
	// returns once a Load anywhere would find it.
	Create(ctx context.Context, rec *Record) error
	// Load returns the record with id, read strongly consistent;
	// ErrNoTask when there is none or it has expired.
	Load(ctx context.Context, id string) (*Record, error)
	// Replace stores rec in place of the record whose version is prev
	// (rec.Version is prev+1); ErrConflict when the stored version is
	// another, ErrNoTask when the record is gone.
	Replace(ctx context.Context, rec *Record, prev int64) error
}

// Errors of a Store. Any other error is a failure to reach the store,
// which the server refuses retryably.
var (
	ErrNoTask   = errors.New("tasks: no such task")
	ErrExists   = errors.New("tasks: task id taken")
	ErrConflict = errors.New("tasks: task changed since it was read")
)

// newID returns a task id: 192 bits from crypto/rand, base64url. It
// is a bearer handle, bound to its creator's principal as well.
func newID() string {
	var b [24]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// A task is one store item (DynamoDB's are at most 400 KB). Its parts
// are bounded so that every record the server writes is at most
// MaxRecordBytes as stored: while the task may still run, it keeps
// its call, its answers and its outstanding input requests (at most 64 +
// 128 + 96 KiB, and the keys it asked); once it has ended it keeps only
// its outcome (a result of at most 320 KiB), with the principal, tool and
// key it was created with (at most 64 KiB, as they were part of the call).
const (
	// maxCall bounds the record a call creates: its arguments,
	// capabilities, request state and answers, principal and key.
	maxCall = 64 << 10
	// maxAnswers bounds the answers a task keeps over its life.
	maxAnswers = 128 << 10
	// maxInput bounds one input round of a task's handler: its
	// requests and the state it keeps for the next run.
	maxInput = 96 << 10
	// maxInputKey bounds the key of a task's input request: a
	// store keeps keys as names (DynamoDB's map element names).
	maxInputKey = 1 << 10
	// maxResult bounds the result object of a completed task, as it
	// is encoded (a character JSON escapes counts as its escape).
	maxResult = 320 << 10
)

// MaxRecordBytes bounds a task record's [Record.StoredSize]: the
// server writes no record larger (the bounds above keep every transition
// within it), and a Store must keep any record up to it. DynamoDB's
// 400 KB item holds one with room for the attribute names, numbers and
// key of package tasks' item.
const MaxRecordBytes = 384 << 10

// entryBytes is what StoredSize counts for each entry of a record's
// maps and lists besides its key and value: a store's per-element
// overhead (DynamoDB counts one byte per element of a map or list).
const entryBytes = 4

// StoredSize is the size a store may take to keep r: the bytes of its
// strings and raw JSON and binary members as they are (a store keeps them
// so, never escaped or re-encoded), and entryBytes for each entry of
// its maps and lists. Fixed-size members (numbers, times, flags) are not
// counted: a store's item adds at most a fixed amount for them.
func (r *Record) StoredSize() int {
	n := len(r.ID) + len(r.Principal) + len(r.Quota) + len(r.Tool) + len(r.Status) + len(r.Message) +
		len(r.ProtocolVersion) + len(r.IdempotencyKey) + len(r.Owner) +
		len(r.Arguments) + len(r.Capabilities) + len(r.State) + len(r.Result) + len(r.Error)
	for k, v := range r.Responses {
		n += len(k) + len(v) + entryBytes
	}
	for k, v := range r.Requests {
		n += len(k) + len(v) + entryBytes
	}
	for _, k := range r.Asked {
		n += len(k) + entryBytes
	}
	return n
}

// ErrTooLarge is returned, wrapped, by a Store that cannot keep a
// record because of its size, and by the server for a transition that
// would take a record over MaxRecordBytes. It is permanent: the same
// write never succeeds.
var ErrTooLarge = errors.New("tasks: task record too large to store")

// maxWriteRetries bounds the read-modify-write rounds of one transition
// that lose to concurrent writers.
const maxWriteRetries = 16

// mutate applies change to the task with id: one transition, written
// by a writer of its own.
func mutate(ctx context.Context, store Store, id string, change func(r *Record, now time.Time) bool) (*Record, error) {
	return (&writer{store: store, id: id}).mutate(ctx, change)
}

// writer writes the transitions of one task, read-modify-write with
// the store's version check. It remembers the last record it sent: a
// write whose acknowledgement was lost may still have landed (a store
// client that retries it then meets its own write as a conflict, or the
// caller sees a failure and tries again), and a record read back with the
// very version and update time it sent is that write. A caller that
// retries a transition after a failure keeps one writer for all its
// tries, so that a write that landed is never taken for another's.
type writer struct {
	store Store
	id    string
	sent  *Record
}

// mutate applies change, retrying when another writer came between a
// read and its write. change reports whether it changed the record (it
// is then written, with the version and UpdatedAt advanced); it must only
// read the record. It returns the record as written, as read when
// unchanged, or as this writer's earlier write left it.
func (w *writer) mutate(ctx context.Context, change func(r *Record, now time.Time) bool) (*Record, error) {
	for range maxWriteRetries {
		rec, err := w.store.Load(ctx, w.id)
		if err != nil {
			return nil, err
		}
		if w.sent != nil && sameWrite(rec, w.sent) {
			return rec, nil
		}
		now := time.Now()
		prev := rec.Version
		status, message := rec.Status, rec.Message
		if !change(rec, now) {
			return rec, nil
		}
		if n := rec.StoredSize(); n > MaxRecordBytes {
			return nil, fmt.Errorf("updating a task: the record would be %d bytes, more than %d: %w", n, MaxRecordBytes, ErrTooLarge)
		}
		rec.Version = prev + 1
		if !now.After(rec.UpdatedAt) {
			now = rec.UpdatedAt.Add(time.Millisecond)
		}
		rec.UpdatedAt = now
		w.sent = rec
		switch err := w.store.Replace(ctx, rec, prev); {
		case err == nil:
			if sw, ok := w.store.(statusWatcher); ok && (rec.Status != status || rec.Message != message) {
				sw.statusChanged(ctx, rec)
			}
			return rec, nil
		case !errors.Is(err, ErrConflict):
			return nil, err
		}
	}
	return nil, fmt.Errorf("updating a task: %d writers in a row came between a read and its write", maxWriteRetries)
}

// leaseSkew is how long after a lease's end another request may take the
// task over. A worker writes its outcome only before its lease ends (by
// its own clock), so a write that was sent in time lands before anyone
// else may move the task, across instances whose clocks differ by less.
const leaseSkew = 2 * time.Second

// leaseLapsed reports whether r's lease (a worker's, or a dispatch's
// grace) has ended, skew included, at now.
func leaseLapsed(r *Record, now time.Time) bool {
	return now.After(r.LeaseUntil.Add(leaseSkew))
}

// sameWrite reports whether stored is the record written as sent: the
// same version, written at the same instant (every write advances both,
// and the instant is the writer's own clock reading).
func sameWrite(stored, sent *Record) bool {
	return stored.Version == sent.Version && stored.UpdatedAt.Equal(sent.UpdatedAt)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// failIfOutOfRuns fails r when its workers have started MaxAttempts runs
// (each one's lease lapsed, or it would not be asked): whoever finds it so
// — a worker taking it, tasks/get re-driving it — ends it the same way.
func failIfOutOfRuns(r *Record, to *Options) bool {
	if r.Attempts < to.MaxAttempts {
		return false
	}
	failTask(r, mcperr.Wrap(mcperr.KindInternal, nil), "The task's worker stopped "+strconv.Itoa(r.Attempts)+" times.")
	return true
}

// failTask makes r failed with the JSON-RPC error of e; message is its
// statusMessage, for people.
func failTask(r *Record, e *mcperr.Error, message string) {
	b, err := json.Marshal(e.Wire())
	if err != nil {
		b = []byte(`{"code":-32603,"message":"Internal error"}`)
	}
	r.Status, r.Error, r.Result, r.Owner, r.Message = StatusFailed, b, nil, "", message
	r.forgetCall()
}

// forgetCall drops from r, which has ended, what only a run needs: the
// call (arguments, capabilities, state), the answers, the input requests
// and the keys asked. An ended task never runs again; it keeps its
// outcome and what names it (principal, tool, version, key), so that its
// record has all its room for the result.
func (r *Record) forgetCall() {
	r.Arguments, r.Capabilities, r.State, r.HasState = nil, nil, nil, false
	r.Responses, r.Requests, r.Asked = nil, nil, nil
}

// appendTask appends the task as the wire has it: the Task members, and
// with detailed the status's own (inputRequests, result or error), as
// tasks/get answers; without, as a CreateTaskResult.
func appendTask(dst []byte, to *Options, r *Record, detailed bool) []byte {
	dst = append(dst, `{"taskId":`...)
	dst = jsonscan.AppendString(dst, r.ID)
	dst = append(dst, `,"status":`...)
	dst = jsonscan.AppendString(dst, string(r.Status))
	if r.Message != "" {
		dst = append(dst, `,"statusMessage":`...)
		dst = jsonscan.AppendString(dst, r.Message)
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
		case StatusInputRequired:
			dst = append(dst, `,"inputRequests":{`...)
			first := true
			for _, k := range sortedKeys(r.Requests) {
				if !first {
					dst = append(dst, ',')
				}
				first = false
				dst = jsonscan.AppendString(dst, k)
				dst = append(dst, ':')
				dst = append(dst, r.Requests[k]...)
			}
			dst = append(dst, '}')
		case StatusCompleted:
			dst = append(dst, `,"result":`...)
			dst = append(dst, r.Result...)
		case StatusFailed:
			dst = append(dst, `,"error":`...)
			dst = append(dst, r.Error...)
		}
	}
	return append(dst, '}')
}

// idShaped reports whether id could be one of this server's task ids
// (newID's base64url), up to 128 characters for ids of a store's own.
func idShaped(id string) bool {
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
func failWith(o *stateless.Outcome, e *mcperr.Error, message string) func(*Record) {
	o.Code, o.Kind = e.Code(), e.Kind().String()
	if e.ServerFault() {
		o.Fault = true
	}
	if o.Err == nil {
		o.Err = e.Unwrap()
	}
	return func(r *Record) { failTask(r, e, message) }
}

// heldBy reports whether r is still the run's of the worker that took it
// as taken: working, and owned by that worker, or let go by a re-drive
// that no other worker took up since (its runs unchanged).
func heldBy(r, taken *Record) bool {
	return r.Status == StatusWorking && (r.Owner == taken.Owner || r.Owner == "" && r.Attempts == taken.Attempts)
}

// keyedID is the id of the task of a keyed call: 192 bits of SHA-256
// over the caller, the tool, the key ("" for a tool deduplicated by its
// arguments) and the arguments' canonical digest, base64url, as newID's
// are. The same key with other arguments is another task (and, with a
// claim, refused as a conflict before this). The id is as hard to guess
// as the key and the arguments, and bound to the principal like every
// task: whoever could name it could as well send the keyed call again and
// have its CreateTaskResult replayed.
func keyedID(principal, tool, key string, args json.RawMessage) string {
	h := sha256.New()
	for _, part := range []string{"io.github.serverless-mcp/task", principal, tool, key} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write([]byte(part))
	}
	d := canon.Digest(args)
	h.Write(d[:])
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:24])
}
