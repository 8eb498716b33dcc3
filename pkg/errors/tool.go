package mcperr

import (
	"strconv"
	"time"
)

// ToolKind names one way a tool call can fail that the model should see and
// may act on. These are not refusals: the call was well-formed and reached
// its tool, so the answer is a CallToolResult with isError set (the spec's
// rule for tool failures), not a JSON-RPC error.
type ToolKind uint8

// The tool failure kinds.
const (
	_                        ToolKind = iota
	ToolKindInvalidArguments          // arguments do not match the input schema or the tool's rules
	ToolKindNotFound                  // the thing the tool acts on does not exist
	ToolKindForbidden                 // the caller may not do this
	ToolKindRetryLater                // transient; the model may retry after the hint
	ToolKindStateChanged              // the entities changed under the call; re-read them
	ToolKindRefused                   // the tool declines, with its own code and details

	numToolKinds
)

var toolSpecs = [numToolKinds]struct {
	name    string
	message string
}{
	ToolKindInvalidArguments: {name: "invalid_arguments", message: "Invalid arguments"},
	ToolKindNotFound:         {name: "not_found", message: "Not found"},
	ToolKindForbidden:        {name: "forbidden", message: "Forbidden"},
	ToolKindRetryLater:       {name: "retryable", message: "Temporarily unavailable; retry later"},
	ToolKindStateChanged:     {name: "state_changed", message: "State changed; re-read and try again"},
	ToolKindRefused:          {name: "refused", message: "Refused"},
}

// String returns the kind's stable name, sent as the failure's type.
func (k ToolKind) String() string {
	if k == 0 || k >= numToolKinds {
		return "tool_kind(" + strconv.Itoa(int(k)) + ")"
	}
	return toolSpecs[k].name
}

// ToolKinds returns every ToolKind, in declaration order.
func ToolKinds() []ToolKind {
	ks := make([]ToolKind, 0, numToolKinds-1)
	for k := ToolKind(1); k < numToolKinds; k++ {
		ks = append(ks, k)
	}
	return ks
}

// ToolError is a tool failure shown to the model. A handler returns one as
// its error; the server turns it into an isError result.
type ToolError struct {
	kind       ToolKind
	detail     string
	retryAfter time.Duration
	entities   []string
	code       string
	details    any
	cause      error
}

// NewInvalidArguments reports arguments the tool cannot use. detail says
// what is wrong, for the model to correct.
func NewInvalidArguments(detail string) *ToolError {
	return &ToolError{kind: ToolKindInvalidArguments, detail: detail}
}

// NewNotFound reports that what the call names does not exist.
func NewNotFound(detail string) *ToolError { return &ToolError{kind: ToolKindNotFound, detail: detail} }

// NewForbidden reports that the caller may not do this.
func NewForbidden(detail string) *ToolError {
	return &ToolError{kind: ToolKindForbidden, detail: detail}
}

// NewRetryLater reports a transient failure with a retry-after hint.
func NewRetryLater(after time.Duration, cause error) *ToolError {
	return &ToolError{kind: ToolKindRetryLater, retryAfter: after, cause: cause}
}

// NewStateChanged reports that the named entities changed under the call.
func NewStateChanged(entities ...string) *ToolError {
	return &ToolError{kind: ToolKindStateChanged, entities: entities}
}

// NewRefused reports that the tool declines, with a tool-defined code and
// details the model can use.
func NewRefused(code string, details any) *ToolError {
	return &ToolError{kind: ToolKindRefused, code: code, details: details}
}

// Kind reports the failure's kind.
func (t *ToolError) Kind() ToolKind { return t.kind }

// ServerFault reports whether the failure is the server's rather than the
// call's: RetryLater means something behind the tool (a table, an API) is
// down or slow, which an operator must see even though the model is told
// in-band — unless its cause is the caller's cancellation
// ([CallerCancelled]): the dependency was cut off, not down. The other
// kinds describe the call or the data.
func (t *ToolError) ServerFault() bool {
	return t.kind == ToolKindRetryLater && !CallerCancelled(t.cause)
}

// TripsBreaker reports whether the failure says something behind the
// tool is failing, which a circuit breaker counts: a RetryLater whose
// cause is not the caller's cancellation.
func (t *ToolError) TripsBreaker() bool { return t != nil && t.ServerFault() }

// RetryAfter is the hint for RetryLater, or zero.
func (t *ToolError) RetryAfter() time.Duration { return t.retryAfter }

// Error implements error.
func (t *ToolError) Error() string {
	s := "tool " + t.kind.String()
	if t.detail != "" {
		s += ": " + t.detail
	}
	if t.cause != nil {
		s += ": " + t.cause.Error()
	}
	return s
}

// Unwrap returns the cause.
func (t *ToolError) Unwrap() error { return t.cause }

// Text is the text content block shown to the model.
func (t *ToolError) Text() string {
	msg := toolSpecs[t.kindOr()].message
	switch {
	case t.detail != "":
		msg += ": " + t.detail
	case t.kind == ToolKindRetryLater && t.retryAfter > 0:
		msg += " (after " + strconv.FormatInt(t.retryAfter.Milliseconds(), 10) + " ms)"
	case t.kind == ToolKindStateChanged && len(t.entities) > 0:
		msg += ": " + join(t.entities, ", ")
	case t.kind == ToolKindRefused && t.code != "":
		msg += ": " + t.code
	}
	return msg
}

func (t *ToolError) kindOr() ToolKind {
	if t.kind == 0 || t.kind >= numToolKinds {
		return ToolKindRefused
	}
	return t.kind
}

// ToolFailure is the machine-readable form of a ToolError, carried in the
// result's _meta so that clients can branch without parsing text.
type ToolFailure struct {
	Type         string   `json:"type"`
	Retryable    bool     `json:"retryable,omitempty"`
	RetryAfterMs int64    `json:"retryAfterMs,omitempty"`
	Entities     []string `json:"entities,omitempty"`
	Code         string   `json:"code,omitempty"`
	Details      any      `json:"details,omitempty"`
}

// Failure returns the machine-readable form.
func (t *ToolError) Failure() ToolFailure {
	return ToolFailure{
		Type:         t.kindOr().String(),
		Retryable:    t.kind == ToolKindRetryLater,
		RetryAfterMs: t.retryAfter.Milliseconds(),
		Entities:     t.entities,
		Code:         t.code,
		Details:      t.details,
	}
}
