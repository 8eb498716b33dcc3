package stateless

import (
	"context"
	"sync/atomic"
	"time"
)

// Outcome describes one answered request, for logs and metrics. It never
// holds arguments, state or tokens. Handle fills it in as the request goes
// through; a dependency the request reaches (a key service, a store) may
// annotate it through [OutcomeFrom].
type Outcome struct {
	Method   string // JSON-RPC method as sent (the peer's bytes), "" when the body was unreadable; MethodTaskRun for a task worker's run
	Target   string // registered tool or prompt name; empty for other methods
	Status   int    // HTTP status
	Code     int    // JSON-RPC error code, 0 on success
	Kind     string // refusal kind or tool failure type, "" on success
	Version  string // negotiated protocol version
	Duration time.Duration

	// OwnMethod says Method is one of the server's own (AddMethod): a
	// name the server chose, not the peer, which a metric may name.
	OwnMethod bool

	// TaskRun marks the outcome of a task worker's run (package tasks),
	// which answers no request: its Method is MethodTaskRun and its Target
	// the task's tool. A peer's request never sets it, whatever method it
	// names.
	TaskRun bool

	// Fault is set when the server, not the request, is at fault: a
	// refusal of a server-fault kind (see pkg/errors), a tool's RetryLater
	// failure, a panic, or a call whose idempotency claim could not be
	// completed. Operators are alerted on these and never on a peer's
	// mistakes; most of them travel in-band with HTTP 200, so the status
	// cannot tell.
	Fault bool
	// Err is the internal cause, for logs only; it is never sent.
	Err error
	// ErrFromTool marks an Err returned by tool, prompt or resource code,
	// whose text may quote the call's arguments: log its type, not its
	// text, unless the operator opted in.
	ErrFromTool bool
	// Panic is set when a handler panicked; the request was answered with
	// an internal error.
	Panic *Panic

	// Claim is the idempotency decision for a tools/call: "" (no claim),
	// ClaimNew, ClaimReplay, ClaimConflict, ClaimInProgress,
	// ClaimUnavailable, ClaimNotCommitted or ClaimLost.
	Claim string
	// StateOpened and StateSealed record that the request redeemed a
	// sealed request state and that its answer sealed a new one.
	StateOpened, StateSealed bool
	// TraceParent is the request's W3C traceparent header, when it is
	// well-formed (anything else is dropped, never logged).
	TraceParent string
	// Steps are the durations of the request's stages, for debug logs.
	Steps Steps
	// KMSCalls counts the key-service calls made for this request; a key
	// service adapter adds to it through [OutcomeFrom].
	KMSCalls atomic.Int32
	// Metrics are the handler's own ([Call.Metric]).
	Metrics []Metric
}

// Steps are the durations of one request's stages. A stage that did not
// run is zero.
type Steps struct {
	Decode  time.Duration // transport checks and decoding the message
	State   time.Duration // opening the request state (and redeeming it)
	Claim   time.Duration // taking the idempotency claim
	Handler time.Duration // the tool, prompt or resource handler
	Finish  time.Duration // completing or releasing the claim
}

// Panic describes a handler that panicked. Value is what was passed to
// panic: it may hold the call's arguments, so a logger should record its
// type unless told otherwise.
type Panic struct {
	Value any
	Stack []byte
}

// The idempotency decisions recorded in Outcome.Claim.
const (
	ClaimNew         = "new"               // claimed; the tool ran
	ClaimReplay      = "replay"            // a completed call's result was replayed
	ClaimConflict    = "conflict"          // the key was used for another request
	ClaimInProgress  = "in_progress"       // the key's call is running elsewhere
	ClaimUnavailable = "store_unavailable" // the store failed; the tool did not run
	// ClaimNotCommitted: the tool ran, but the writes it enlisted in the
	// claim's completion were not committed; the client was told to
	// retry.
	ClaimNotCommitted = "not_committed"
	// ClaimLost: the tool ran and its result was sent, but could not be
	// recorded: a retry after the claim's lease runs the tool again. A
	// fault, logged at ERROR with the claim's key digest.
	ClaimLost = "completion_lost"
)

// MethodTaskRun is the Method of a task worker's run's Outcome.
const MethodTaskRun = "tasks/run"

type outcomeKey struct{}

// OutcomeFrom returns the Outcome of the request ctx belongs to, or nil
// outside a request or when the server has no Observe hook. Dependencies
// use it to annotate the request (KMSCalls).
func OutcomeFrom(ctx context.Context) *Outcome {
	o, _ := ctx.Value(outcomeKey{}).(*Outcome)
	return o
}

// classify records in o what the request's final answer a says of it:
// the refusal's code and kind, a failure's kind, whether the server is
// at fault, the internal cause and whether a handler wrote it. It is the
// one place an answer's meaning reaches the Outcome; the stages' timings
// and the extensions' annotations are recorded where they are measured.
func (o *Outcome) classify(a *Answer) {
	cause := a.cause
	switch {
	case a.refusal != nil:
		e := a.refusal
		o.Code, o.Kind = e.Code(), e.Kind().String()
		if e.ServerFault() {
			o.Fault = true
		}
		if cause == nil {
			cause = e.Unwrap()
		}
	case a.replay != nil:
		o.Kind = "replay"
	case a.kind != "":
		o.Kind = a.kind
	}
	if a.fault {
		o.Fault = true
	}
	if a.panic != nil {
		o.Panic, o.ErrFromTool = a.panic, true
	}
	if o.Err == nil && cause != nil {
		o.Err = cause
		o.ErrFromTool = o.ErrFromTool || a.fromTool
	}
}
