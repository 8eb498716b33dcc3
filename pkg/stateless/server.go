package stateless

import (
	"context"
	"fmt"
	"log/slog"
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

	// HandlerLogger receives the records handlers log through
	// [Call.Logger], with the request's fields. Default: discard.
	HandlerLogger *slog.Logger

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

	// Interceptors run around every request, every execution of a
	// handler and every tool call, the first outermost (see
	// [Interceptor]). Package claims's makes side-effecting calls
	// exactly-once and single-use request state single-use.
	Interceptors []Interceptor

	// StreamKeepAlive is how long a streamed answer ([Server.HandleStream])
	// to a client that accepts an event stream may go without a byte: at
	// each such lull an SSE comment is sent, starting the event stream if
	// nothing had. A gateway ends a silent stream (API Gateway a REST
	// API's after 5 minutes without a byte, on a regional endpoint), and
	// a cut connection would leave the client without the in-band answer
	// the server gives near the deadline. Default 60s; negative sends
	// none.
	StreamKeepAlive time.Duration

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

	// ToolSchemas are the schemas of typed tools ([AddTool]) generated
	// ahead of time by [GenerateToolSchemas], usually embedded
	// with go:embed: a typed tool that gives no schema takes its own from
	// here, so the function infers nothing at run time. A test keeps the
	// file true to the Go types ([CheckToolSchemas]).
	ToolSchemas []byte

	// SchemaEngine infers the schemas of typed tools that give none and
	// are not in ToolSchemas, and validates schemas beyond the flat ones
	// the server infers and validates itself (see [SchemaEngine]);
	// package toolschema has one, on google/jsonschema-go. Default:
	// none, so that a function whose schemas are flat links no schema
	// library; a typed tool whose type is not flat is then refused at
	// registration, naming the fixes.
	SchemaEngine SchemaEngine

	// URITemplates parses the URI templates of resource templates
	// ([Server.AddResourceTemplate]) and matches URIs against them;
	// package uritemplate has one. Default: none, so that a function
	// with no resource templates links no template library;
	// AddResourceTemplate panics without one, naming it.
	URITemplates URITemplateEngine

	// Events carries the change events that listen streams
	// (subscriptions/listen) deliver between the instances serving the
	// endpoint ([EventLog]; package events keeps one in DynamoDB). nil
	// delivers the events published in this process only, which is all
	// there is to deliver for a single process.
	Events EventLog

	// Listen bounds listen streams (see [ListenOptions]).
	Listen ListenOptions
}

// Server serves MCP over one stateless endpoint. Register tools,
// resources, prompts and a completion handler, then serve it with
// [Server.ServeHTTP] or [Server.Handle]. Registration is safe at any time;
// each request sees the registry as it was when the request arrived.
type Server struct {
	info Implementation
	opts Options
	// sealer is Options.Sealer or, made on first use (a cold start that
	// needs no state pays nothing for it), a local one.
	sealer     reqstate.Sealer
	sealerOnce sync.Once
	log        *slog.Logger

	mu  sync.Mutex // serialises registration
	reg atomic.Pointer[registry]

	// serverInfoMeta is the pre-encoded "io.modelcontextprotocol/serverInfo"
	// member that every modern result carries.
	serverInfoMeta []byte

	bufs sync.Pool

	// overdue counts the tool handlers still running after their call was
	// answered (see Options.MaxOverdue).
	overdue atomic.Int32

	// schemas is Options.ToolSchemas, read on first use.
	schemas generatedSchemas

	// interceptors are Options.Interceptors and those added by Use; what
	// they provide is summed up once, as they are added: executes says
	// one runs around executions, singleUse and taskRuns that one
	// provides single-use state and task runs, toolMeta what they add to
	// tools' definitions (their Extensions are the registry's
	// advertised).
	interceptors        []Interceptor
	executes            bool
	singleUse, taskRuns bool
	toolMeta            []func(*Tool) Meta
	listenFilters       []ListenFilter
	// answering is set once the server starts answering its first
	// request: the chain of interceptors is fixed from then on (Use).
	answering atomic.Bool

	// hub hands published events to this process's listen streams.
	hub hub
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
	if s.opts.StreamKeepAlive == 0 {
		s.opts.StreamKeepAlive = 60 * time.Second
	}
	if s.opts.MaxOverdue <= 0 {
		s.opts.MaxOverdue = 64
	}
	s.opts.Listen.defaults()
	s.sealer = s.opts.Sealer
	s.schemas.file = s.opts.ToolSchemas
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	b, err := appendImplementation([]byte(`"`+metaServerInfo+`":`), &info)
	if err != nil {
		panic(fmt.Sprintf("stateless: server info does not marshal: %v", err))
	}
	s.serverInfoMeta = b
	s.reg.Store(&registry{})
	s.bufs.New = func() any { return new(buffer) }
	if len(s.opts.Interceptors) > 0 {
		s.Use(s.opts.Interceptors...) // not called for none: a cold start runs no code it need not
	}
	return s
}

// stateSealer returns the sealer of the server's request state.
func stateSealer(s *Server) reqstate.Sealer {
	s.sealerOnce.Do(func() {
		if s.sealer == nil {
			s.sealer = reqstate.NewLocal(nil, nil)
		}
	})
	return s.sealer
}

// appendImplementation appends info as JSON. It is written by hand
// because every cold start builds it, before anything else has paid for
// encoding/json's first use of a type (about 0.3 ms here); icons, which
// the hand-written form does not cover, go through encoding/json.
func appendImplementation(b []byte, info *Implementation) ([]byte, error) {
	if len(info.Icons) > 0 {
		m, err := marshalCompact(info)
		return append(b, m...), err
	}
	b = append(b, `{"name":`...)
	b = appendString(b, info.Name)
	if info.Title != "" {
		b = append(b, `,"title":`...)
		b = appendString(b, info.Title)
	}
	b = append(b, `,"version":`...)
	b = appendString(b, info.Version)
	for _, f := range [...]struct{ k, v string }{{"description", info.Description}, {"websiteUrl", info.WebsiteURL}} {
		if f.v != "" {
			b = append(b, ',', '"')
			b = append(b, f.k...)
			b = append(b, '"', ':')
			b = appendString(b, f.v)
		}
	}
	return append(b, '}'), nil
}
