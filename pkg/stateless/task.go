package stateless

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"
)

// ExtensionTasks is the identifier of the tasks extension (SEP-2663): a
// tools/call may answer with a task handle, which the client polls with
// tasks/get, feeds input with tasks/update and stops with tasks/cancel.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// TaskSupport says whether a tool's calls run as tasks of the tasks
// extension. The extension has no wire declaration of it: the server
// alone decides, per call.
type TaskSupport uint8

const (
	// TaskForbidden: the call is always answered in its request (the
	// default).
	TaskForbidden TaskSupport = iota
	// TaskOptional: the call becomes a task when the client declares the
	// extension on it, and is answered in its request otherwise.
	TaskOptional
	// TaskRequired: the call always becomes a task; a client that does not
	// declare the extension is refused with -32021 naming it, before
	// anything runs.
	TaskRequired
)

// TaskOptions configure the tasks extension (Options.Tasks). Store is
// required; every other field has a default.
type TaskOptions struct {
	// Store keeps the tasks; package tasks has DynamoDB and memory stores.
	Store TaskStore

	// Dispatch hands the task with id to a worker, which calls
	// [Server.RunTask] with it: on Lambda an asynchronous invocation of
	// the function itself (package tasks). nil runs the worker in this
	// process, in a goroutine: right for a local server, wrong on Lambda,
	// which freezes the process between invocations.
	Dispatch func(ctx context.Context, id string) error

	// TTL is how long a task is kept from its creation (its ttlMs);
	// tasks/get of an older one answers as for an unknown task. Default
	// one hour.
	TTL time.Duration

	// PollInterval is the pollIntervalMs suggested to clients. Default 1s.
	PollInterval time.Duration

	// MaxRun bounds one run of a task's handler, besides the worker's own
	// deadline (on Lambda, the function's timeout less
	// Options.DeadlineMargin). Default 15 minutes, Lambda's longest
	// invocation.
	MaxRun time.Duration

	// DispatchGrace is how long a dispatched task may wait for a worker to
	// take it before tasks/get dispatches it again. Default one minute.
	DispatchGrace time.Duration

	// MaxAttempts bounds the runs a task may start: a task whose worker
	// died (its lease lapsed) is dispatched again on the next tasks/get,
	// up to this many runs in all; then it fails. Default 3.
	MaxAttempts int

	// CancelCheck is how often a running worker reads its task, to see a
	// tasks/cancel and stop the handler. Default 1s.
	CancelCheck time.Duration
}

func (o *TaskOptions) withDefaults() *TaskOptions {
	c := *o
	if c.TTL <= 0 {
		c.TTL = time.Hour
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.MaxRun <= 0 {
		c.MaxRun = 15 * time.Minute
	}
	if c.DispatchGrace <= 0 {
		c.DispatchGrace = time.Minute
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.CancelCheck <= 0 {
		c.CancelCheck = time.Second
	}
	return &c
}

// TaskStatus is a task's status.
type TaskStatus string

// The statuses, as on the wire.
const (
	TaskWorking       TaskStatus = "working"
	TaskInputRequired TaskStatus = "input_required"
	TaskCompleted     TaskStatus = "completed"
	TaskFailed        TaskStatus = "failed"
	TaskCancelled     TaskStatus = "cancelled"
)

// Terminal reports whether s is final.
func (s TaskStatus) Terminal() bool {
	return s == TaskCompleted || s == TaskFailed || s == TaskCancelled
}

// TaskRecord is a task as a TaskStore keeps it: the call it runs, where
// it stands, and which worker holds it. Stores keep it whole and compare
// only Version; every transition is decided by the server.
type TaskRecord struct {
	ID string `json:"id"`
	// Version increases by one with every write; a store replaces a record
	// only if its stored version is the one the writer read.
	Version   int64      `json:"version"`
	Principal string     `json:"principal"`
	Tool      string     `json:"tool"`
	Status    TaskStatus `json:"status"`
	Message   string     `json:"statusMessage,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
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

// TaskStore keeps task records. Both of package tasks' stores pass one
// contract test suite (package tasks/taskstest).
type TaskStore interface {
	// Create stores a new record; ErrTaskExists if its id is taken. It
	// returns once a Load anywhere would find it.
	Create(ctx context.Context, rec *TaskRecord) error
	// Load returns the record with id, read strongly consistent;
	// ErrNoTask when there is none or it has expired.
	Load(ctx context.Context, id string) (*TaskRecord, error)
	// Replace stores rec in place of the record whose version is prev
	// (rec.Version is prev+1); ErrTaskConflict when the stored version is
	// another, ErrNoTask when the record is gone.
	Replace(ctx context.Context, rec *TaskRecord, prev int64) error
}

// Errors of a TaskStore. Any other error is a failure to reach the store,
// which the server refuses retryably.
var (
	ErrNoTask       = errors.New("stateless: no such task")
	ErrTaskExists   = errors.New("stateless: task id taken")
	ErrTaskConflict = errors.New("stateless: task changed since it was read")
)

// newTaskID returns a task id: 192 bits from crypto/rand, base64url. It
// is a bearer handle, bound to its creator's principal as well.
func newTaskID() string {
	var b [24]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// TaskRun describes the run of a task a handler is part of; see
// [ToolRequest.Task].
type TaskRun struct {
	// ID is the task's id.
	ID string
	// Attempt counts the runs of the task, from 1: a run after an input
	// round, or after a worker died, is another.
	Attempt int
}
