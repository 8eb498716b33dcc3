package stateless

import (
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Call carries what every handler may know about the request it serves:
// who is calling, under which revision, with which capabilities, and, on
// a multi-round-trip retry, the client's answers and the state the handler
// sealed in the previous round.
type Call struct {
	// Principal identifies the caller, as established by the transport
	// (an authorizer, a verified token). "anonymous" when nothing did.
	Principal string
	// Address is the caller's network address as the transport verified
	// it (Request.Address); "" when unknown.
	Address string
	// ProtocolVersion is the negotiated revision.
	ProtocolVersion string
	// IdempotencyKey is the key the client sent for this call, from
	// params.idempotencyKey or the Idempotency-Key header; "" if none.
	IdempotencyKey string

	quotaKey       string              // an anonymous caller's, made on first use
	caps           *ClientCapabilities // decoded from capsRaw on first use
	clientInfoRaw  json.RawMessage     // the client's clientInfo, as sent
	clientInfo     *Implementation     // decoded from clientInfoRaw on first use
	capsRaw        json.RawMessage
	inputResponses map[string]json.RawMessage
	state          []byte
	hasState       bool
	legacy         bool
	progressToken  json.RawMessage
	logLevel       LoggingLevel
	notes          []json.RawMessage // buffered notifications, in order
	live           *liveStream       // sends notifications as they happen (HandleStream)
	telemetry      *telemetry        // the request's, for Logger
	metrics        []Metric          // Metric's, reported with the outcome
	changes        []Event           // the Notify methods', published once the handler returned
	origin         *callOrigin
}

// callOrigin is what a call's changes are recorded under: set once before
// its handler runs, read only after, so that a handler's copy of the Call
// shares it.
type callOrigin struct {
	target, method string // the tool's, prompt's or resource's name and the method, for the changes' IDs
	hub            *hub   // the server's, for CommitChanges' delivery
}

// QuotaKey is who a per-principal quota charges for this call: the
// principal, or for an anonymous caller the address the transport
// verified ("anonymous@" and the address), so that anonymous callers do
// not share one allowance and one of them cannot use up everyone's. An
// anonymous call whose address is unknown is charged to Anonymous. It is
// a key, not an identity: a task or a request state stays bound to the
// principal.
func (c *Call) QuotaKey() string {
	if c.Principal != Anonymous || c.Address == "" {
		return c.Principal
	}
	if c.quotaKey == "" {
		c.quotaKey = Anonymous + "@" + c.Address
	}
	return c.quotaKey
}

// Streamed reports whether the request is answered through a Stream
// ([Server.HandleStream]: the local server, a Lambda response stream),
// whose connection — on Lambda, whose invocation — it holds until it is
// answered, however long its handler runs.
func (c *Call) Streamed() bool { return c.live != nil }

// ClientInfo is the client's self-description, if it sent one that
// reads as an Implementation (nil otherwise), decoded on first use: most
// requests never ask. It is for display and logs, never for decisions.
func (c *Call) ClientInfo() *Implementation {
	if c.clientInfo == nil && c.clientInfoRaw != nil {
		var ci Implementation
		if jsonv2.Unmarshal(c.clientInfoRaw, &ci) == nil {
			c.clientInfo = &ci
		}
		c.clientInfoRaw = nil
	}
	return c.clientInfo
}

// Capabilities returns the client capabilities declared on this request.
func (c *Call) Capabilities() *ClientCapabilities {
	if c.caps == nil {
		c.caps = decodeCapabilities(c.capsRaw)
	}
	return c.caps
}

// decodeCapabilities reads a clientCapabilities object (its shape was
// checked when the request was read). Member names match exactly, as
// everywhere in the protocol: {"ELICITATION":{}} declares nothing. A
// capability is declared by an object; a member of another type leaves
// that capability undeclared and the others as they are. An object with a
// name twice is ambiguous: it declares nothing.
func decodeCapabilities(raw json.RawMessage) *ClientCapabilities {
	caps := &ClientCapabilities{}
	var members map[string]jsontext.Value
	if len(raw) == 0 || jsonv2.Unmarshal(raw, &members) != nil {
		return caps
	}
	for name, v := range members {
		if v.Kind() != '{' {
			continue
		}
		switch name {
		case "roots":
			caps.Roots = json.RawMessage(v)
		case "sampling":
			caps.Sampling = json.RawMessage(v)
		case "elicitation":
			var e ElicitationCapability
			if jsonv2.Unmarshal(v, &e) == nil {
				caps.Elicitation = &e
			}
		case "extensions":
			_ = jsonv2.Unmarshal(v, &caps.Extensions)
		case "experimental":
			_ = jsonv2.Unmarshal(v, &caps.Experimental)
		}
	}
	return caps
}

// CapabilitiesJSON returns the clientCapabilities object as the client
// sent it (for a task to keep, and read back with the same rules).
func (c *Call) CapabilitiesJSON() json.RawMessage { return c.capsRaw }

// Declares reports whether the request's client capabilities declare the
// extension with identifier ext (an object that is not empty or null).
func (c *Call) Declares(ext string) bool {
	v, ok := c.Capabilities().Extensions[ext]
	return ok && len(v) > 0 && string(v) != "null"
}

// MissingCapabilities returns the client capabilities that input requests
// need and the request's client did not declare, as -32021's
// requiredCapabilities says them, or nil when it declared them all.
func (c *Call) MissingCapabilities(requests map[string]InputRequest) map[string]any {
	caps := c.Capabilities()
	var missing map[string]any
	for _, r := range requests {
		for k, v := range requiredCapability(caps, r) {
			if missing == nil {
				missing = map[string]any{}
			}
			missing[k] = v
		}
	}
	return missing
}

// InputResponses returns every answer of this retry's inputResponses, by
// key (read only).
func (c *Call) InputResponses() map[string]json.RawMessage { return c.inputResponses }

// State returns the state this handler sealed in the previous round, and
// whether there was one. It was authenticated and checked against this
// request before the handler ran.
func (c *Call) State() ([]byte, bool) { return c.state, c.hasState }

// InputResponse returns the client's raw answer to the input request with
// key, from this retry's inputResponses.
func (c *Call) InputResponse(key string) (json.RawMessage, bool) {
	r, ok := c.inputResponses[key]
	return r, ok
}

// ElicitResult decodes the answer to the elicitation with key. It reports
// false when there is no answer or it is not an ElicitResult.
func (c *Call) ElicitResult(key string) (*ElicitResult, bool) {
	raw, ok := c.inputResponses[key]
	if !ok {
		return nil, false
	}
	var r ElicitResult
	if jsonv2.Unmarshal(raw, &r) != nil {
		return nil, false
	}
	switch r.Action {
	case "accept", "decline", "cancel":
		return &r, true
	}
	return nil, false
}

// Progress reports progress on this request. It is sent only when the
// request carried a progressToken; otherwise it does nothing. progress
// should increase with every call; total is omitted when zero.
func (c *Call) Progress(progress, total float64, message string) {
	if len(c.progressToken) == 0 {
		return
	}
	b := make([]byte, 0, 128+len(message))
	b = append(b, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":`...)
	b = append(b, c.progressToken...)
	b = append(b, `,"progress":`...)
	b = strconv.AppendFloat(b, progress, 'g', -1, 64)
	if total != 0 {
		b = append(b, `,"total":`...)
		b = strconv.AppendFloat(b, total, 'g', -1, 64)
	}
	if message != "" {
		b = append(b, `,"message":`...)
		b = appendString(b, message)
	}
	b = append(b, "}}"...)
	c.note(b)
}

// note sends a notification at once on a live stream, or keeps it for the
// answer.
func (c *Call) note(b []byte) {
	if c.live != nil && c.live.event(b) {
		return
	}
	c.notes = append(c.notes, b)
}

// Log sends a notifications/message for this request, if the request's
// _meta asked for log messages at level or below. logger may be "".
func (c *Call) Log(level LoggingLevel, logger string, data any) {
	if c.logLevel == "" || level.rank() < c.logLevel.rank() {
		return
	}
	msg := struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  struct {
			Level  LoggingLevel `json:"level"`
			Logger string       `json:"logger,omitempty"`
			Data   any          `json:"data"`
		} `json:"params"`
	}{JSONRPC: "2.0", Method: "notifications/message"}
	msg.Params.Level, msg.Params.Logger, msg.Params.Data = level, logger, data
	b, err := json.Marshal(msg)
	if err != nil {
		return
	}
	c.note(b)
}

// NotifyResourceUpdated tells the listen streams subscribed to uri, on
// whichever instance they are open, that the resource changed
// (notifications/resources/updated). Like the other Notify methods, it
// records the change when the handler returns with a result (not when it
// was abandoned at its deadline or its call refused), once: a replay of a
// keyed call runs no handler and records nothing, and a keyed call that
// runs again records the same event, which a stream sends once.
func (c *Call) NotifyResourceUpdated(uri string) {
	c.change(ResourceTopic(uri), "", "notifications/resources/updated", mustMarshal(struct {
		URI string `json:"uri"`
	}{uri}))
}

// NotifyOwnResourceUpdated is NotifyResourceUpdated for a resource that
// is the caller's own (what a resources/read answers by its principal,
// such as the note book's notes): only the caller's listen streams hear
// of it, so that no one learns from the timing of events what another
// principal's resources do.
func (c *Call) NotifyOwnResourceUpdated(uri string) {
	c.change(ResourceTopic(uri), c.Principal, "notifications/resources/updated", mustMarshal(struct {
		URI string `json:"uri"`
	}{uri}))
}

// NotifyToolsListChanged tells the listen streams that asked for it that
// the tool list changed (notifications/tools/list_changed).
func (c *Call) NotifyToolsListChanged() {
	c.change(TopicToolsList, "", "notifications/tools/list_changed", nil)
}

// NotifyPromptsListChanged tells the listen streams that asked for it
// that the prompt list changed (notifications/prompts/list_changed).
func (c *Call) NotifyPromptsListChanged() {
	c.change(TopicPromptsList, "", "notifications/prompts/list_changed", nil)
}

// NotifyResourcesListChanged tells the listen streams that asked for it
// that the resource list changed (notifications/resources/list_changed).
func (c *Call) NotifyResourcesListChanged() {
	c.change(TopicResourcesList, "", "notifications/resources/list_changed", nil)
}

// maxChanges bounds the changes one call records.
const maxChanges = 64

func (c *Call) change(topic, owner, method string, params json.RawMessage) {
	if len(c.changes) == maxChanges {
		return
	}
	c.changes = append(c.changes, Event{Topic: topic, Owner: owner, Method: method, Params: params})
}

// prepareChanges gives each change the call notified its ID — derived
// from the call's key when it has one, so that a run again records the
// same events, random otherwise — and its time.
func (c *Call) prepareChanges() {
	now := time.Now()
	var o callOrigin
	if c.origin != nil {
		o = *c.origin
	}
	for i := range c.changes {
		e := &c.changes[i]
		if e.ID == "" {
			if c.IdempotencyKey != "" {
				e.ID = DerivedEventID(c.Principal, o.method, o.target, c.IdempotencyKey, strconv.Itoa(i))
			} else {
				e.ID = NewEventID()
			}
		}
		if e.At.IsZero() {
			e.At = now
		}
	}
}

// CommitChanges lets an interceptor record the events the call's handler
// notified ([Call.NotifyResourceUpdated] and its kin) with the call's own
// commit, so that a change is recorded exactly when the effect that made
// it is — even if the process dies between the two — and never for an
// effect that was not made: package claims enlists them in the claim's
// transaction. An execution interceptor calls it on [Execution.Call] once
// next returned, a tool interceptor on its [ToolRequest]'s Call once the
// handler returned. record is given the events, their IDs and times set,
// and reports whether it took them. If it did, the server records none of
// them in its EventLog and hands them to the listen streams of this
// process only when the returned deliver is called, which the
// interceptor does once its commit is made (and never if it was not). If
// it did not, or the handler notified nothing, deliver is nil and the
// server records the events after the call, as for any call.
func (c *Call) CommitChanges(record func(events []Event) bool) (deliver func()) {
	if len(c.changes) == 0 || c.origin == nil {
		return nil
	}
	c.prepareChanges()
	evs := c.changes
	for i := range evs {
		if CheckEvent(&evs[i]) != nil {
			return nil // Publish reports it
		}
	}
	if !record(evs) {
		return nil
	}
	c.changes = nil
	h := c.origin.hub
	return func() { h.deliver(evs) }
}

// publishChanges records what the call's handler notified, once it has
// returned, unless an interceptor recorded it with the call's commit
// (CommitChanges).
func (s *Server) publishChanges(ctx context.Context, c *Call) {
	if len(c.changes) == 0 {
		return
	}
	c.prepareChanges()
	if err := s.Publish(ctx, c.changes...); err != nil {
		method := ""
		if c.origin != nil {
			method = c.origin.method
		}
		s.log.LogAttrs(ctx, slog.LevelWarn, "recording a call's change events failed; listen streams on other instances miss them",
			slogString("method", method), slogString("error", err.Error()))
	}
	c.changes = nil
}

// Legacy reports whether the client speaks a revision before 2026-07-28.
// Such a client cannot answer input requests.
func (c *Call) Legacy() bool { return c.legacy }
