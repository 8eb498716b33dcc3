package stateless

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// errUnidentified is the cause of the refusal of a request whose
// transport saw an identity source but no identity in it (an authorizer
// context without the members a principal is read from: an API Gateway
// JWT authorizer's iss and sub claims, a Lambda authorizer's principalId),
// which its request line logs.
var errUnidentified = errors.New("an authorizer let the request through without an identity the endpoint reads (JWT claims iss and sub, a Lambda authorizer's principalId, an IAM userArn)")

// Request is one HTTP request, as any transport delivers it: net/http in
// local mode, an API Gateway or Function URL event on Lambda.
type Request struct {
	Method string      // HTTP method
	Header http.Header // canonical keys
	// Body is the request's body. The server reads it in place and may
	// keep slices of it after Handle returns (a task's arguments, a
	// handler left running): it must not be modified or reused.
	Body []byte
	// Host is the host the request was addressed to, for the loopback
	// origin rule.
	Host string
	// Query is the request's query string, as sent (without the "?").
	// The MCP endpoint reads none; the OAuth documents a door routes
	// beside it (package auth's authorization proxy) do.
	Query string
	// Principal identifies the caller, as the transport established it
	// (an authorizer's subject, a verified token). "" means anonymous.
	Principal string
	// Address is the caller's network address as the transport verified
	// it: the socket's peer in local mode, API Gateway's or the function
	// URL's requestContext source IP on Lambda; never a header the client
	// writes (X-Forwarded-For is the client's to forge). "" when unknown.
	// Quotas key an anonymous caller by it ([Call.QuotaKey]).
	Address string
	// Endpoint is the canonical URL of the endpoint the request was
	// addressed to, as the transport established it (configured, or API
	// Gateway's domain name and path; never the client's Host header).
	// Request state is bound to it. "" when unknown.
	Endpoint string
	// Unidentified means the transport saw an identity source but no
	// usable identity: refused 401, never anonymous.
	Unidentified bool
}

// Response is the HTTP response to a Request.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// Anonymous is the principal of a request no transport identified.
const Anonymous = "anonymous"

// Handle answers one request. It never panics and never returns nil: every
// failure, including a panicking handler, is a response.
func (s *Server) Handle(ctx context.Context, r *Request) *Response {
	return s.handleRequest(ctx, r, nil, nil)
}

// HandleEarly answers r as Handle does, with one difference: a tool's
// handler runs on the calling goroutine, and should it still be running
// at its deadline (and a fifth of the margin after), the call is answered
// then, in-band, from a timer's goroutine, by a call of early with the
// response; HandleEarly returns nil once the handler returns. A door that
// can deliver an answer from any goroutine uses it to spare every call
// the hand-off of its handler to a goroutine of its own, which Handle
// makes: package runner's Lambda runtime posts an early answer and goes
// on to the next invocation on another goroutine.
func (s *Server) HandleEarly(ctx context.Context, r *Request, early func(*Response)) *Response {
	return s.handleRequest(ctx, r, nil, early)
}

// handleRequest answers r; st, when set, takes its notifications as
// they happen (HandleStream), and its answer is written to it. early,
// when set, takes the answer a watchdog gives (HandleEarly). It returns
// nil when the watchdog answered.
func (s *Server) handleRequest(ctx context.Context, r *Request, st Stream, early func(*Response)) *Response {
	start := time.Now()
	if !s.answering.Load() {
		s.answering.Store(true)
	}
	// The request's deadline: its context's (a Lambda invocation's), or
	// RequestTimeout from now. A context that lacks one is given it only
	// where the request waits on something (bounded), not on every
	// request.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = start.Add(s.opts.RequestTimeout)
	}
	m := &request{}
	o := &m.outcome
	var live *liveStream
	if st != nil {
		live = &m.live
		live.st = st
		_, live.ends = st.(Ender)
	}
	ctx = s.observing(ctx, r.Header, o)
	var resp *Response
	if isPreflight(r) {
		resp = preflight(s, r, o)
	} else {
		m.exchange.deliverEarly = early
		resp = s.serveRequest(ctx, &m.exchange, r, o, start, deadline, live)
		if m.exchange.early != nil {
			// Answered, reported and delivered by the watchdog
			// (answerEarly) while the handler ran on.
			return nil
		}
		allowCORS(s, r, resp)
	}
	s.reportSince(ctx, o, resp.Status, start)
	if live != nil {
		live.finish(resp)
	}
	return resp
}

// request is the memory of one request's answer, allocated once: its
// exchange, its Outcome (which Options.Observe may keep) and, when it is
// answered onto a Stream, the stream it shares with its handler.
type request struct {
	exchange exchange
	outcome  Outcome
	live     liveStream
}

// observing is ctx carrying o, the Outcome that the stages of the answer
// to a request with header h annotate, when the server observes
// (Options.Observe); ctx as it is otherwise.
func (s *Server) observing(ctx context.Context, h http.Header, o *Outcome) context.Context {
	if s.opts.Observe == nil {
		return ctx
	}
	o.TraceParent = traceParent(h.Get(headerTraceParent))
	return context.WithValue(ctx, outcomeKey{}, o)
}

// reportSince completes o with the answer's status and how long it took
// since start, and reports it: the one exit of every answer.
func (s *Server) reportSince(ctx context.Context, o *Outcome, status int, start time.Time) {
	o.Status = status
	o.Duration = time.Since(start)
	s.report(ctx, o)
}

// Reject answers a request its transport could not hand over whole (a
// body over the limit, a body the gateway's encoding garbled) with e,
// through the same exit as every other answer: CORS, the log line of a
// refusal and Options.Observe, so that no refusal goes unreported. r
// carries what the transport read (its method, headers and host).
func (s *Server) Reject(ctx context.Context, r *Request, e *mcperr.Error) *Response {
	start := time.Now()
	o := &Outcome{}
	ctx = s.observing(ctx, r.Header, o)
	a := refused(e)
	o.classify(&a)
	resp := refusalResponse(nil, e, false)
	allowCORS(s, r, resp)
	s.reportSince(ctx, o, resp.Status, start)
	return resp
}

// report logs a request that was refused or failed, and hands its outcome
// to Options.Observe.
func (s *Server) report(ctx context.Context, o *Outcome) {
	if o.Err != nil || o.Code != 0 || o.Fault {
		level := slog.LevelInfo
		if o.Fault {
			level = slog.LevelError
		}
		s.log.LogAttrs(ctx, level, "mcp request refused",
			slogString("method", o.Method), slogString("kind", o.Kind),
			slogInt("status", o.Status), slogInt("code", o.Code), slogErr(o))
	}
	if s.opts.Observe != nil {
		s.opts.Observe(ctx, o)
	}
}

// exchange is the state of one request on its way through the pipeline.
type exchange struct {
	s   *Server
	r   *Request
	o   *Outcome
	d   *decoded
	reg *registry
	row *methodInfo // the method's, once dispatched
	// response is the request's HTTP response (render).
	response Response
	// running is what only a request that runs a handler of the
	// server's needs (runs), and intercepting what only one that passes
	// request interceptors needs (interception): each allocated then, so
	// that a list or a discovery carries neither.
	running      *running
	intercepting *intercepting
	call         Call
	acceptsSSE   bool
	// streams says the request is answered onto a Stream (HandleStream):
	// its door can hold a listen stream open.
	streams bool
	version string
	legacy  bool

	// principal and scopes are what the bearer token established, when
	// the endpoint is protected (Options.Auth).
	principal string
	scopes    []string

	// redeemID names the request's single-use state, once opened
	// (Execution.SingleUse).
	redeemID string

	// tel is what the handler's Call.Logger needs of the request.
	tel telemetry
	// start is when the request came; out is the stream its answer is
	// written to (HandleStream), nil when it is returned; deliverEarly
	// takes an answer the watchdog gives (HandleEarly).
	start        time.Time
	out          *liveStream
	deliverEarly func(*Response)
	// early is the answer the watchdog gave in the handler's place
	// (answerEarly), nil until it does.
	early *Response

	// deadline is the request's (see Handle); bound is the request's
	// context with it, made once the request first waits on something,
	// and stop cancels it when the request is answered.
	deadline time.Time
	bound    context.Context
	stop     context.CancelFunc
}

// intercepting is what the request interceptors use: intercepted, what
// they see, and held, the answer an interceptor is handed by its next.
type intercepting struct {
	intercepted InterceptedRequest
	held        Answer
}

// running is the part of an exchange that only a request that runs a
// handler of the server's (a tool's, a prompt's, a resource's) uses, in
// one allocation made when it first does (runs). Its held serves both
// kinds of interceptor: the execution interceptors hold it while the
// request interceptors wait on them, and the request's answer, once they
// return, is the same value.
type running struct {
	intercepting
	// exec is the handler of the server's the request runs (execute).
	exec executable
	// watch is the run of the request's tool handler: its state, and the
	// watchdog of a handler run on the request's goroutine (runWatched);
	// tool is what a handler run on that goroutine (watched, or Inline)
	// returned, and its copy of the Call, which a handler left running
	// goes on writing while the request's goroutine reads only the other
	// fields.
	watch watchdog
	tool  toolRun
}

// runs returns the request's running part, made on first use.
func (x *exchange) runs() *running {
	if x.running == nil {
		x.running = new(running)
	}
	return x.running
}

// interception returns the request interceptors' part: the running
// part's for a method that runs a handler, which needs that part anyway,
// else one of their own, made on first use. A list or a discovery passed
// through interceptors so carries no handler's part.
func (x *exchange) interception() *intercepting {
	if x.row.executes {
		return &x.runs().intercepting
	}
	if x.intercepting == nil {
		x.intercepting = new(intercepting)
	}
	return x.intercepting
}

// bounded returns ctx with the request's deadline: ctx itself when it has
// one (on Lambda, the invocation's), else a context made once per request
// and cancelled when it is answered. Everything a request waits on — a
// store, the key service, a handler other than a tool's — gets it.
func (x *exchange) bounded(ctx context.Context) context.Context {
	if _, ok := ctx.Deadline(); ok {
		return ctx
	}
	if x.bound == nil {
		x.bound, x.stop = context.WithDeadline(ctx, x.deadline)
	}
	return x.bound
}

// serveRequest answers one request that is not a CORS preflight: its
// answer (serve), rendered once, and the request's Outcome derived from
// it once.
func (s *Server) serveRequest(ctx context.Context, x *exchange, r *Request, o *Outcome, start, deadline time.Time, live *liveStream) *Response {
	x.s, x.r, x.o, x.reg, x.start, x.deadline, x.out = s, r, o, s.reg.Load(), start, deadline, live
	a := x.serveSafely(ctx, live)
	if x.stop != nil {
		x.stop()
	}
	if x.early != nil {
		return x.early
	}
	resp := x.render(&a)
	o.classify(&a)
	o.Metrics = x.call.metrics
	return resp
}

// answerEarly answers the request with a from the watchdog's goroutine,
// while the request's own is held by its handler (runWatched): rendered,
// reported and written as serveRequest and handleRequest would, onto the
// request's stream, which it ends, or handed to HandleEarly's early. The
// request interceptors and the execution interceptors see the answer
// when the handler returns, as they would see it at the deadline had the
// handler run apart; what they make of it then is not sent.
func (x *exchange) answerEarly(ctx context.Context, a Answer) {
	resp := x.renderOf(&a)
	allowCORS(x.s, x.r, resp)
	x.o.classify(&a)
	x.o.Metrics = x.call.metrics
	x.s.reportSince(ctx, x.o, resp.Status, x.start)
	if x.out != nil {
		x.out.finishEarly(resp)
	} else {
		x.deliverEarly(resp)
	}
	x.early = resp
}

// serveSafely is serve, with a panic anywhere in the request's own
// goroutine answered as an internal error.
func (x *exchange) serveSafely(ctx context.Context, live *liveStream) (a Answer) {
	defer func() {
		if p := recover(); p != nil {
			// The panic value may hold the call's arguments: it is kept
			// apart from Err, for the logger to record by type.
			a = panicked(&Panic{Value: p, Stack: debug.Stack()})
		}
	}()
	return x.serve(ctx, live)
}

// serve answers the request: transport checks, decoding, authentication,
// then the protocol (request).
func (x *exchange) serve(ctx context.Context, live *liveStream) Answer {
	r, o := x.r, x.o
	if e := x.transportChecks(); e != nil {
		return refused(e)
	}
	x.streams = live != nil
	if live != nil && x.acceptsSSE {
		x.call.live = live
	}
	if r.Unidentified {
		return refused(mcperr.Wrap(mcperr.KindUnauthorized, errUnidentified))
	}
	decodeStart := time.Now()
	d, e := decodeMessage(r.Body, x.reg)
	o.Steps.Decode = time.Since(decodeStart)
	if e != nil {
		// The refusal names the request's id when it could be read.
		x.d = d
		return refused(e)
	}
	x.d = d
	o.Method = d.method
	o.OwnMethod = d.row != nil && d.row.own
	if e := x.authenticate(ctx); e != nil {
		return refused(e)
	}
	if d.id == nil {
		// A notification. The core defines none over HTTP; a legacy
		// client's notifications/initialized and any other notification
		// are accepted and ignored.
		return accepted
	}
	return x.request(ctx)
}
