package stateless

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
)

// Options configure a Server. The zero value is usable: every field has a
// default that is safe for a public endpoint.
type Options struct {
	// Instructions is returned by server/discover and initialize.
	Instructions string

	// AllowedOrigins lists the exact Origin values (scheme://host[:port])
	// that browsers may call from. A request without an Origin header is
	// always allowed (it does not come from a browser page). When the
	// endpoint is served on a loopback host, loopback origins are allowed
	// too. "*" allows any origin: do not use it on an endpoint that acts on
	// ambient credentials. An allowed origin's preflight is answered and
	// its answers carry the CORS headers, with the origin echoed (see
	// [CORSAllowHeaders]); credentials are never allowed.
	AllowedOrigins []string

	// MaxBodyBytes bounds a request body. Default 4 MiB.
	MaxBodyBytes int64

	// PageSize bounds list results. Default 100.
	PageSize int

	// DiscoverCache, ListCache and ReadCache are the cache hints sent on
	// server/discover, on the four list methods, and on resources/read.
	// Defaults: discover 5 minutes public; lists 1 minute, public unless
	// some item has a visibility rule (then private); reads 0, private.
	DiscoverCache *CacheHint
	ListCache     *CacheHint
	ReadCache     *CacheHint

	// Sealer seals multi-round-trip request state. Default: a
	// [reqstate.Local] sealer with a random per-process key, which is only
	// right for a single process; production uses a shared key.
	Sealer reqstate.Sealer

	// Logger receives one record per refused request with the internal
	// reason, never request contents: at ERROR for server faults, else at
	// INFO. Default: discard. Observe is the richer hook.
	Logger *slog.Logger

	// Idempotency, if set, makes side-effecting tool calls exactly-once
	// (see package claims). nil runs every call as it comes.
	Idempotency Idempotency

	// Redeemer records redemptions of single-use request state (see
	// InputRequired.SingleUse); package claims implements it.
	Redeemer Redeemer

	// LegacyLogLevel is the least severe level of the log messages sent to
	// clients of revisions before 2026-07-28, which set a level once per
	// session with logging/setLevel; a stateless server cannot remember
	// it. Default info. Modern clients choose per request in _meta.
	LegacyLogLevel LoggingLevel

	// Auth, if set, protects the endpoint with OAuth bearer tokens (see
	// AuthOptions): every request needs a valid token for this endpoint,
	// and a tool's Scopes must be granted.
	Auth *AuthOptions

	// Observe, if set, is called once per request after it is answered
	// (package observe logs it and writes its metrics). ctx is the
	// request's.
	Observe func(ctx context.Context, o *Outcome)

	// DeadlineMargin is how long before the request's deadline a
	// tools/call is answered: a tool still running then is abandoned and
	// the call refused with a retryable Timeout, in-band, while the
	// transport can still deliver it (on Lambda, before the invocation is
	// cut off and the gateway answers 502). Default 500ms.
	DeadlineMargin time.Duration

	// RequestTimeout is the deadline of a request whose context has none
	// (net/http, locally); a Lambda invocation's context has its own.
	// Default 30s.
	RequestTimeout time.Duration

	// MaxOverdue bounds the tool handlers left running after their call
	// was answered with a Timeout (handlers that ignore their context):
	// each holds a goroutine until it returns. While that many are
	// running, tools/call is refused with a retryable Timeout without
	// running the tool. Default 64.
	MaxOverdue int
}

// Outcome describes one answered request, for logs and metrics. It never
// holds arguments, state or tokens. Handle fills it in as the request goes
// through; a dependency the request reaches (a key service, a store) may
// annotate it through [OutcomeFrom].
type Outcome struct {
	Method   string // JSON-RPC method as sent (the peer's bytes), "" when the body was unreadable
	Target   string // registered tool or prompt name; empty for other methods
	Status   int    // HTTP status
	Code     int    // JSON-RPC error code, 0 on success
	Kind     string // refusal kind or tool failure type, "" on success
	Version  string // negotiated protocol version
	Duration time.Duration

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

type outcomeKey struct{}

// OutcomeFrom returns the Outcome of the request ctx belongs to, or nil
// outside a request or when the server has no Observe hook. Dependencies
// use it to annotate the request (KMSCalls).
func OutcomeFrom(ctx context.Context) *Outcome {
	o, _ := ctx.Value(outcomeKey{}).(*Outcome)
	return o
}

// Server serves MCP over one stateless endpoint. Register tools,
// resources, prompts and a completion handler, then serve it with
// [Server.ServeHTTP] or [Server.Handle]. Registration is safe at any time;
// each request sees the registry as it was when the request arrived.
type Server struct {
	info   Implementation
	opts   Options
	sealer reqstate.Sealer
	log    *slog.Logger

	mu  sync.Mutex // serialises registration
	reg atomic.Pointer[registry]

	// serverInfoMeta is the pre-encoded "io.modelcontextprotocol/serverInfo"
	// member that every modern result carries.
	serverInfoMeta []byte

	bufs sync.Pool

	// overdue counts the tool handlers still running after their call was
	// answered (see Options.MaxOverdue).
	overdue atomic.Int32
}

// NewServer returns a server that identifies itself as info.
func NewServer(info Implementation, opts *Options) *Server {
	s := &Server{info: info}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.MaxBodyBytes <= 0 {
		s.opts.MaxBodyBytes = 4 << 20
	}
	if s.opts.PageSize <= 0 {
		s.opts.PageSize = 100
	}
	if s.opts.DeadlineMargin <= 0 {
		s.opts.DeadlineMargin = 500 * time.Millisecond
	}
	if s.opts.RequestTimeout <= 0 {
		s.opts.RequestTimeout = 30 * time.Second
	}
	if s.opts.MaxOverdue <= 0 {
		s.opts.MaxOverdue = 64
	}
	s.sealer = s.opts.Sealer
	if s.sealer == nil {
		s.sealer = reqstate.NewLocal(nil, nil)
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	b, err := json.Marshal(info)
	if err != nil {
		panic(fmt.Sprintf("stateless: server info does not marshal: %v", err))
	}
	s.serverInfoMeta = append([]byte(`"`+metaServerInfo+`":`), b...)
	s.reg.Store(&registry{idempotency: s.opts.Idempotency != nil})
	s.bufs.New = func() any { return new(buffer) }
	return s
}

// registry is an immutable snapshot of what is registered. Registration
// copies it; requests read it without locks.
type registry struct {
	tools     []*registeredTool // sorted by name
	resources []*registeredResource
	templates []*registeredTemplate
	prompts   []*registeredPrompt
	complete  CompletionHandler

	idempotency     bool // side-effecting calls are claimed
	toolsHidden     bool // some tool has a visibility rule
	promptsHidden   bool
	resourcesHidden bool
}

func (r *registry) clone() *registry {
	c := *r
	c.tools = slices.Clone(r.tools)
	c.resources = slices.Clone(r.resources)
	c.templates = slices.Clone(r.templates)
	c.prompts = slices.Clone(r.prompts)
	return &c
}

func (s *Server) update(f func(r *registry)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reg.Load().clone()
	f(r)
	s.reg.Store(r)
}

// Visibility decides whether the caller identified by principal may see
// an item. Hidden items answer exactly like absent ones.
type Visibility func(ctx context.Context, principal string) bool

func (r *registry) tool(name string) *registeredTool {
	i, ok := slices.BinarySearchFunc(r.tools, name, func(t *registeredTool, n string) int { return strings.Compare(t.def.Name, n) })
	if !ok {
		return nil
	}
	return r.tools[i]
}

func (r *registry) prompt(name string) *registeredPrompt {
	i, ok := slices.BinarySearchFunc(r.prompts, name, func(p *registeredPrompt, n string) int { return strings.Compare(p.def.Name, n) })
	if !ok {
		return nil
	}
	return r.prompts[i]
}

func (r *registry) resource(uri string) *registeredResource {
	i, ok := slices.BinarySearchFunc(r.resources, uri, func(p *registeredResource, n string) int { return strings.Compare(p.def.URI, n) })
	if !ok {
		return nil
	}
	return r.resources[i]
}

func insertSorted[T any](list []T, item T, key func(T) string) ([]T, bool) {
	i, found := slices.BinarySearchFunc(list, key(item), func(e T, k string) int { return strings.Compare(key(e), k) })
	if found {
		return list, false
	}
	return slices.Insert(list, i, item), true
}

// capabilities returns what the registry lets the server advertise.
func (r *registry) capabilities() ServerCapabilities {
	var c ServerCapabilities
	if len(r.tools) > 0 {
		c.Tools = &ListCapability{}
	}
	if len(r.prompts) > 0 {
		c.Prompts = &ListCapability{}
	}
	if len(r.resources) > 0 || len(r.templates) > 0 {
		c.Resources = &ResourceCapability{}
	}
	if r.complete != nil {
		c.Completions = &struct{}{}
	}
	// Logging: notifications/message rides on a request's own response
	// stream when the request's _meta asks for a level.
	c.Logging = &struct{}{}
	if r.idempotency {
		c.Extensions = map[string]any{MetaIdempotency: map[string]any{}}
	}
	return c
}

// has reports whether the registry has feature ("tools", "prompts",
// "resources", "completions"; see the method table), which the server
// then advertises.
func (r *registry) has(feature string) bool {
	switch feature {
	case "tools":
		return len(r.tools) > 0
	case "prompts":
		return len(r.prompts) > 0
	case "resources":
		return len(r.resources) > 0 || len(r.templates) > 0
	case "completions":
		return r.complete != nil
	}
	return false
}

func (s *Server) discoverCache() CacheHint {
	if s.opts.DiscoverCache != nil {
		return *s.opts.DiscoverCache
	}
	return CacheHint{TTL: 5 * time.Minute}
}

func (s *Server) listCache(hidden bool) CacheHint {
	h := CacheHint{TTL: time.Minute}
	if s.opts.ListCache != nil {
		h = *s.opts.ListCache
	}
	if hidden {
		h.Private = true
	}
	return h
}

func (s *Server) readCache() CacheHint {
	if s.opts.ReadCache != nil {
		return *s.opts.ReadCache
	}
	return CacheHint{Private: true}
}

func (s *Server) legacyLogLevel() LoggingLevel {
	if s.opts.LegacyLogLevel.rank() > 0 {
		return s.opts.LegacyLogLevel
	}
	return LevelInfo
}
