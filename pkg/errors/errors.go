// Package mcperr is the refusal taxonomy of the endpoint: one closed family
// of values naming every way an MCP request can fail, and for each one the
// JSON-RPC code, the HTTP status, the error.data, and a fixed message.
//
// The point of deciding all of this in one place is that a protocol
// endpoint's failure modes are part of its interface. Clients branch on the
// code and status (a 400 with -32022 means "retry with another version"; a
// 404 with -32601 means "this server is modern and does not have that
// method"), operators branch on retryability, and both are easy to get
// subtly wrong when every handler invents its own answer.
//
// Messages are constants. A message never contains a string the peer chose
// (a method name, a tool name, a URI): those bytes are attacker-controlled
// and end up in logs and in model context. Where the spec requires a peer
// value to be echoed (the requested protocol version of -32022), it goes in
// error.data, where JSON encoding keeps it inert.
//
// Tool-level failures are not refusals: they are results with isError set,
// shown to the model so it can correct itself. They live in [ToolError].
//
// Its import path is .../pkg/errors; its name is mcperr, so that it never
// shadows the standard library's errors package beside it.
package mcperr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// JSON-RPC and MCP error codes used by the taxonomy.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	// MCP-reserved codes defined by revision 2026-07-28.
	CodeHeaderMismatch                  = -32020
	CodeMissingRequiredClientCapability = -32021
	CodeUnsupportedProtocolVersion      = -32022
)

// Kind names one way a request can be refused. The set is closed: every
// refusal the endpoint produces is one of these.
type Kind uint8

// The kinds. The zero Kind is not valid.
const (
	_ Kind = iota

	// Transport refusals, decided before the body is read as JSON-RPC.
	KindMethodNotAllowed     // HTTP method other than POST
	KindForbiddenOrigin      // Origin header not on the allow-list
	KindUnsupportedMediaType // Content-Type is not application/json
	KindNotAcceptable        // Accept does not admit a JSON response
	KindBodyTooLarge         // body over the configured limit
	KindUnauthorized         // no or invalid credentials (from an authorizer)
	KindInsufficientScope    // credentials lack a scope the operation needs

	// Message-shape refusals.
	KindParseError     // body is not JSON
	KindInvalidRequest // not a single JSON-RPC request or notification
	KindBatchRejected  // a JSON array: 2026-07-28 has no batches
	KindResponseRejected

	// Protocol refusals.
	KindMalformedMeta       // params._meta missing a required key
	KindHeaderMismatch      // an MCP header is missing, malformed, or differs from the body
	KindUnsupportedVersion  // protocol version not served {requested, supported}
	KindUnnegotiableVersion // legacy initialize without a usable version
	KindMalformedInitialize // legacy initialize params unusable
	KindUnknownMethod       // method unknown, removed, or not advertised
	KindMalformedParams     // params do not have the method's shape
	KindInvalidCursor       // pagination cursor not issued by this server
	KindUnknownTool         // no such tool, or hidden from this caller
	KindNotCallable         // tool exists and is visible but cannot be called now
	KindUnknownResource     // no resource at that URI {uri}
	KindUnknownPrompt       // no such prompt, or hidden from this caller
	KindUnknownTask         // no such task, expired, or another caller's
	KindMissingCapability   // processing needs a client capability {requiredCapabilities}
	KindTamperedState       // requestState failed to open
	KindHandlerFailed       // the handler returned an error; carries its message
	KindDuplicateInFlight   // same idempotency key is being processed {retryAfter}
	KindStateInUse          // a single-use requestState is being redeemed by another call {retryAfter}
	KindIdempotencyConflict // same idempotency key, different request
	KindBadIdempotencyKey   // idempotency key empty, malformed, too long, or ambiguous {reason}
	KindStoreUnavailable    // idempotency store unreachable: failed closed
	KindReplayUnavailable   // completed call whose response could not be kept
	KindNotCommitted        // the tool's enlisted writes were not committed: nothing happened

	// Operational classes.
	KindTimeout           // deadline passed before an answer
	KindRateLimited       // caller over its rate {retryAfter}
	KindDependencyFailure // an upstream the handler needs failed
	KindCircuitOpen       // a tool's dependencies have been failing: not called until its breaker closes {retryAfter}
	KindInternal          // a bug; never the peer's fault
	KindCancelled         // the caller went away (hung up, cancelled) before the answer: its doing, never a fault

	numKinds
)

// spec is the fixed description of one Kind.
type spec struct {
	name      string
	code      int
	status    int
	message   string
	retryable bool
	// dataType, when set, is carried as error.data.type so that clients can
	// branch on the refusal without parsing the message.
	dataType string
	// serverFault says the server, not the request, is at fault: an
	// operator should see it (logged at ERROR, counted as a fault). It is
	// decided by kind, not by HTTP status, because server faults travel
	// in-band with 200 — save that a refusal whose cause is the caller's
	// cancellation is never one ([CallerCancelled]).
	serverFault bool
}

var specs = [numKinds]spec{
	KindMethodNotAllowed:     {name: "method_not_allowed", code: CodeInvalidRequest, status: http.StatusMethodNotAllowed, message: "Method not allowed: this endpoint accepts POST only"},
	KindForbiddenOrigin:      {name: "forbidden_origin", code: CodeInvalidRequest, status: http.StatusForbidden, message: "Forbidden: origin not allowed"},
	KindUnsupportedMediaType: {name: "unsupported_media_type", code: CodeInvalidRequest, status: http.StatusUnsupportedMediaType, message: "Unsupported media type: send application/json"},
	KindNotAcceptable:        {name: "not_acceptable", code: CodeInvalidRequest, status: http.StatusNotAcceptable, message: "Not acceptable: accept application/json and text/event-stream"},
	KindBodyTooLarge:         {name: "body_too_large", code: CodeInvalidRequest, status: http.StatusRequestEntityTooLarge, message: "Request body too large"},
	KindUnauthorized:         {name: "unauthorized", code: CodeInvalidRequest, status: http.StatusUnauthorized, message: "Unauthorized"},
	KindInsufficientScope:    {name: "insufficient_scope", code: CodeInvalidRequest, status: http.StatusForbidden, message: "Insufficient scope", dataType: "insufficient_scope"},

	KindParseError:       {name: "parse_error", code: CodeParseError, status: http.StatusBadRequest, message: "Parse error: body is not valid JSON"},
	KindInvalidRequest:   {name: "invalid_request", code: CodeInvalidRequest, status: http.StatusBadRequest, message: "Invalid request: expected one JSON-RPC 2.0 request or notification"},
	KindBatchRejected:    {name: "batch_rejected", code: CodeInvalidRequest, status: http.StatusBadRequest, message: "Invalid request: JSON-RPC batches are not supported"},
	KindResponseRejected: {name: "response_rejected", code: CodeInvalidRequest, status: http.StatusBadRequest, message: "Invalid request: clients do not send responses to this endpoint"},

	KindMalformedMeta:       {name: "malformed_meta", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Invalid params: _meta must carry io.modelcontextprotocol/protocolVersion (string) and io.modelcontextprotocol/clientCapabilities (object)"},
	KindHeaderMismatch:      {name: "header_mismatch", code: CodeHeaderMismatch, status: http.StatusBadRequest, message: "Header mismatch: an MCP header is missing, malformed, or differs from the request body"},
	KindUnsupportedVersion:  {name: "unsupported_version", code: CodeUnsupportedProtocolVersion, status: http.StatusBadRequest, message: "Unsupported protocol version"},
	KindUnnegotiableVersion: {name: "unnegotiable_version", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Invalid params: initialize needs a protocolVersion string"},
	KindMalformedInitialize: {name: "malformed_initialize", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Invalid params: initialize params are malformed"},
	KindUnknownMethod:       {name: "unknown_method", code: CodeMethodNotFound, status: http.StatusNotFound, message: "Method not found"},
	KindMalformedParams:     {name: "malformed_params", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Invalid params"},
	KindInvalidCursor:       {name: "invalid_cursor", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Invalid params: unknown pagination cursor"},
	KindUnknownTool:         {name: "unknown_tool", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Invalid params: unknown tool"},
	KindNotCallable:         {name: "not_callable", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Invalid params: tool cannot be called"},
	KindUnknownResource:     {name: "unknown_resource", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Resource not found"},
	KindUnknownPrompt:       {name: "unknown_prompt", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Invalid params: unknown prompt"},
	KindUnknownTask:         {name: "unknown_task", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Invalid params: unknown or expired task", dataType: "unknown_task"},
	KindMissingCapability:   {name: "missing_capability", code: CodeMissingRequiredClientCapability, status: http.StatusBadRequest, message: "Missing required client capability"},
	KindTamperedState:       {name: "tampered_state", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Invalid params: invalid or expired requestState"},
	KindHandlerFailed:       {name: "handler_failed", code: CodeInternalError, status: http.StatusOK, message: "Handler failed", serverFault: true},
	KindDuplicateInFlight:   {name: "duplicate_in_flight", code: CodeInvalidRequest, status: http.StatusBadRequest, message: "Request with this idempotency key is already in progress", retryable: true, dataType: "idempotency_key_in_progress"},
	KindStateInUse:          {name: "state_in_use", code: CodeInvalidRequest, status: http.StatusBadRequest, message: "The request state is being used by another call; retry later", retryable: true, dataType: "request_state_in_use"},
	KindIdempotencyConflict: {name: "idempotency_conflict", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Idempotency key was already used for a different request", dataType: "idempotency_key_conflict"},
	KindBadIdempotencyKey:   {name: "idempotency_key_invalid", code: CodeInvalidParams, status: http.StatusBadRequest, message: "Invalid params: the idempotency key is empty, malformed, too long, or ambiguous; the tool did not run", dataType: "idempotency_key_invalid"},
	KindStoreUnavailable:    {name: "store_unavailable", code: CodeInternalError, status: http.StatusOK, message: "Idempotency store unavailable; the tool did not run", retryable: true, dataType: "idempotency_store_unavailable", serverFault: true},
	KindNotCommitted:        {name: "not_committed", code: CodeInternalError, status: http.StatusOK, message: "The tool's effect could not be committed, so nothing was done; retry with the same idempotency key", retryable: true, dataType: "idempotency_not_committed", serverFault: true},
	KindReplayUnavailable:   {name: "replay_unavailable", code: CodeInternalError, status: http.StatusOK, message: "The original call completed but its response was too large to keep; it was not run again", dataType: "idempotency_replay_unavailable"},

	KindTimeout:           {name: "timeout", code: CodeInternalError, status: http.StatusOK, message: "Timed out", retryable: true, dataType: "timeout", serverFault: true},
	KindRateLimited:       {name: "rate_limited", code: CodeInternalError, status: http.StatusOK, message: "Rate limited", retryable: true, dataType: "rate_limited"},
	KindDependencyFailure: {name: "dependency_failure", code: CodeInternalError, status: http.StatusOK, message: "A dependency failed", retryable: true, dataType: "dependency_failure", serverFault: true},
	KindCircuitOpen:       {name: "circuit_open", code: CodeInternalError, status: http.StatusOK, message: "This tool's dependencies are failing; it was not run, retry later", retryable: true, dataType: "circuit_open"},
	KindInternal:          {name: "internal", code: CodeInternalError, status: http.StatusOK, message: "Internal error", serverFault: true},
	KindCancelled:         {name: "cancelled", code: CodeInternalError, status: http.StatusOK, message: "Request cancelled", retryable: true, dataType: "cancelled"},
}

// TripsBreaker reports whether the refusal says a dependency is failing
// (a timeout, a failed upstream), which a circuit breaker counts; the
// caller's mistakes, its cancellation ([CallerCancelled]) and the server's
// bugs do not.
func (e *Error) TripsBreaker() bool {
	return e != nil && (e.kind == KindTimeout || e.kind == KindDependencyFailure) && !CallerCancelled(e.cause)
}

// CallerCancelled reports whether err says the call's caller went away:
// its context was cancelled (a client that closed its connection, a
// cancelled task), which err carries as context.Canceled or as an SDK's
// cancellation error around it (the AWS SDK's, which has a CanceledError
// method). It is the caller's doing, not a dependency's: a failure it
// caused is never a server fault and never trips a breaker. An SDK's
// cancellation around context.DeadlineExceeded is a deadline, the
// server's: it is not the caller's.
func CallerCancelled(err error) bool {
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if errors.Is(err, context.Canceled) {
		return true
	}
	var c interface{ CanceledError() bool }
	return errors.As(err, &c) && c.CanceledError()
}

// Kinds returns every Kind, in declaration order.
func Kinds() []Kind {
	ks := make([]Kind, 0, numKinds-1)
	for k := Kind(1); k < numKinds; k++ {
		ks = append(ks, k)
	}
	return ks
}

// String returns the kind's stable snake_case name, used in logs.
func (k Kind) String() string {
	if k == 0 || k >= numKinds {
		return "kind(" + strconv.Itoa(int(k)) + ")"
	}
	return specs[k].name
}

func (k Kind) spec() spec {
	if k == 0 || k >= numKinds {
		return specs[KindInternal]
	}
	return specs[k]
}

// Error is one refusal. Build it with [New] or one of the constructors that
// take the data a kind carries; the zero value is not valid.
type Error struct {
	kind       Kind
	data       any
	retryAfter time.Duration
	message    string // HandlerFailed only: the handler's own message
	challenge  string // WWW-Authenticate value, for 401 and 403
	cause      error  // never sent to the peer
}

// New returns a refusal of kind k carrying no data.
func New(k Kind) *Error { return &Error{kind: k} }

// Wrap returns a refusal of kind k that records cause for logs and for
// errors.Is/As. The cause is never sent to the peer.
func Wrap(k Kind, cause error) *Error { return &Error{kind: k, cause: cause} }

// NewUnsupportedVersion is -32022: data {supported, requested}.
func NewUnsupportedVersion(requested string, supported []string) *Error {
	return &Error{kind: KindUnsupportedVersion, data: versionData{Supported: supported, Requested: requested}}
}

type versionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}

// NewMissingCapability is -32021. required is a ClientCapabilities object
// naming what is missing, for example {"elicitation":{}}; it is sent as
// data.requiredCapabilities.
func NewMissingCapability(required any) *Error {
	return &Error{kind: KindMissingCapability, data: capabilityData{Required: required}}
}

type capabilityData struct {
	Required any `json:"requiredCapabilities"`
}

// NewUnknownResource is the resource-not-found refusal: -32602 with
// data.uri, as the spec requires. The URI is the peer's, so it appears only
// in data.
func NewUnknownResource(uri string) *Error {
	return &Error{kind: KindUnknownResource, data: uriData{URI: uri}}
}

type uriData struct {
	URI string `json:"uri"`
}

// NewUnknownTool is the unknown-tool refusal. suggestion, if not empty, is a
// tool name this caller can see that is close to the one asked for. Pass a
// suggestion computed only among visible tools, so that a hidden tool gets
// the same answer as an absent one.
func NewUnknownTool(suggestion string) *Error {
	e := &Error{kind: KindUnknownTool}
	if suggestion != "" {
		e.data = suggestionData{DidYouMean: suggestion}
	}
	return e
}

type suggestionData struct {
	DidYouMean string `json:"didYouMean"`
}

// NewBadIdempotencyKey refuses a tools/call whose idempotency key is
// empty, malformed, too long, or ambiguous. reason is one of the server's
// fixed words for the mistake (for example "empty" or "mismatch"), carried
// as data.reason; it must never be built from the key itself.
func NewBadIdempotencyKey(reason string) *Error {
	e := &Error{kind: KindBadIdempotencyKey}
	if reason != "" {
		e.data = reasonData{Reason: reason}
	}
	return e
}

type reasonData struct {
	Reason string `json:"reason"`
}

// NewHandlerFailed is a handler's failure outside the isError channel. msg
// is the handler's own message: it is server code's text, and must not
// contain peer-controlled strings.
func NewHandlerFailed(msg string, cause error) *Error {
	return &Error{kind: KindHandlerFailed, message: msg, cause: cause}
}

// NewRetryable returns a refusal of a retryable kind with a retry-after hint.
func NewRetryable(k Kind, after time.Duration, cause error) *Error {
	return &Error{kind: k, retryAfter: after, cause: cause}
}

// NewInsufficientScope is the step-up refusal: HTTP 403 with a
// WWW-Authenticate challenge listing every scope the operation needs.
// resourceMetadata, if set, is the protected resource metadata URL.
func NewInsufficientScope(required []string, resourceMetadata string) *Error {
	ch := `Bearer error="insufficient_scope", scope="` + quoteSafe(join(required, " ")) + `"`
	if resourceMetadata != "" {
		ch += `, resource_metadata="` + quoteSafe(resourceMetadata) + `"`
	}
	return &Error{kind: KindInsufficientScope, challenge: ch, data: scopeData{Required: required}}
}

// NewUnauthorized is the authentication challenge: HTTP 401 with a
// WWW-Authenticate Bearer challenge that sends the client to the
// protected-resource metadata (RFC 9728) at resourceMetadata, names the
// scopes the request needs when they are known, and says
// error="invalid_token" when the request presented a token (RFC 6750).
// cause, never sent, is why the token was refused.
func NewUnauthorized(resourceMetadata string, scopes []string, invalidToken bool, cause error) *Error {
	ch := `Bearer resource_metadata="` + quoteSafe(resourceMetadata) + `"`
	if len(scopes) > 0 {
		ch += `, scope="` + quoteSafe(join(scopes, " ")) + `"`
	}
	if invalidToken {
		ch += `, error="invalid_token"`
	}
	return &Error{kind: KindUnauthorized, challenge: ch, cause: cause}
}

type scopeData struct {
	Required []string `json:"requiredScopes"`
}

// WithData returns a copy of e carrying data as error.data. It is for
// kinds whose data is free-form (for example the supported versions on a
// legacy refusal); data must not be built from unescaped peer strings.
func (e *Error) WithData(data any) *Error {
	c := *e
	c.data = data
	return &c
}

// Kind reports the refusal's kind.
func (e *Error) Kind() Kind { return e.kind }

// Code is the JSON-RPC error code.
func (e *Error) Code() int { return e.kind.spec().code }

// HTTPStatus is the status the response carries over HTTP to a client of
// revision 2026-07-28. Clients read a JSON-RPC error body on 400 (and the
// spec's 404 for -32601) but take other statuses for transport failures
// and lose the error — the TypeScript SDK turns a 409 or a 503 into a bare
// HTTP error — so a refusal decided after the message was read is 400
// when the request is at fault and 200, in-band, when the server is; its
// retryability travels in error.data and a Retry-After header.
func (e *Error) HTTPStatus() int { return e.kind.spec().status }

// LegacyHTTPStatus is the status for a client of a revision before
// 2026-07-28. Those clients treat any non-2xx answer to a request as a
// transport failure and lose the JSON-RPC error, so refusals decided after
// the message was read travel in-band with 200; transport refusals and the
// version refusal keep their status.
func (e *Error) LegacyHTTPStatus() int {
	if e.kind < KindMalformedMeta || e.kind == KindUnsupportedVersion || e.kind == KindHeaderMismatch {
		return e.HTTPStatus()
	}
	return http.StatusOK
}

// Message is the fixed, peer-independent message.
func (e *Error) Message() string {
	if e.kind == KindHandlerFailed && e.message != "" {
		return e.message
	}
	return e.kind.spec().message
}

// Retryable reports whether the same request may succeed if sent again.
func (e *Error) Retryable() bool { return e.kind.spec().retryable }

// ServerFault reports whether refusals of kind k are the server's fault
// (a dependency down, a deadline passed, a bug) rather than the request's.
func (k Kind) ServerFault() bool { return k.spec().serverFault }

// ServerFault reports whether the server, not the request, is at fault:
// operators are alerted on these, never on a peer's mistakes nor on a
// failure its cancellation caused ([CallerCancelled]).
func (e *Error) ServerFault() bool { return e.kind.spec().serverFault && !CallerCancelled(e.cause) }

// RetryAfter is the hint for when to retry, or zero.
func (e *Error) RetryAfter() time.Duration { return e.retryAfter }

// Challenge is the WWW-Authenticate header value, or "".
func (e *Error) Challenge() string { return e.challenge }

// Data is the value sent as error.data, or nil for none.
func (e *Error) Data() any {
	t := e.kind.spec().dataType
	if t == "" && !e.Retryable() {
		return e.data
	}
	// Kinds that clients branch on carry {type, retryable, retryAfterMs}
	// merged with their own data.
	m := map[string]any{}
	if t != "" {
		m["type"] = t
	}
	if e.Retryable() {
		m["retryable"] = true
	}
	if e.retryAfter > 0 {
		m["retryAfterMs"] = e.retryAfter.Milliseconds()
	}
	if e.data != nil {
		raw, err := json.Marshal(e.data)
		if err == nil {
			var extra map[string]any
			if json.Unmarshal(raw, &extra) == nil {
				for k, v := range extra {
					if _, taken := m[k]; !taken {
						m[k] = v
					}
				}
			} else {
				m["detail"] = e.data
			}
		}
	}
	return m
}

// Error implements error. It names the kind and the cause, for logs.
func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("mcp %s: %v", e.kind, e.cause)
	}
	return "mcp " + e.kind.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is a refusal of the same kind, so that
// errors.Is(err, mcperr.New(mcperr.KindTamperedState)) works.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.kind == e.kind
}

// WireError is the JSON-RPC error object.
type WireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// Wire returns the JSON-RPC error object for e.
func (e *Error) Wire() WireError {
	return WireError{Code: e.Code(), Message: e.Message(), Data: e.Data()}
}

func join(ss []string, sep string) string {
	n := 0
	for _, s := range ss {
		n += len(s) + len(sep)
	}
	b := make([]byte, 0, n)
	for i, s := range ss {
		if i > 0 {
			b = append(b, sep...)
		}
		b = append(b, s...)
	}
	return string(b)
}

// quoteSafe drops characters that would break out of a quoted-string in an
// HTTP header (quotes, backslashes, controls). Scope names are server
// configuration, but the header must stay well-formed whatever they hold.
func quoteSafe(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '"' || c == '\\' || c < 0x20 || c == 0x7f {
			continue
		}
		b = append(b, c)
	}
	return string(b)
}
