package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Request is one HTTP request, as any transport delivers it: net/http in
// local mode, an API Gateway or Function URL event on Lambda.
type Request struct {
	Method string      // HTTP method
	Header http.Header // canonical keys
	Body   []byte
	// Host is the host the request was addressed to, for the loopback
	// origin rule.
	Host string
	// Principal identifies the caller, as the transport established it
	// (an authorizer's subject, a verified token). "" means anonymous.
	Principal string
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
	start := time.Now()
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.RequestTimeout)
		defer cancel()
	}
	o := &Outcome{}
	if s.opts.Observe != nil {
		ctx = context.WithValue(ctx, outcomeKey{}, o)
		o.TraceParent = traceParent(r.Header.Get("Traceparent"))
	}
	var resp *Response
	if isPreflight(r) {
		resp = s.preflight(r, o)
	} else {
		resp = s.handle(ctx, r, o)
		s.allowCORS(r, resp)
	}
	o.Status = resp.Status
	o.Duration = time.Since(start)
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
	return resp
}

// traceParent returns the request's W3C trace context traceparent
// (version-traceid-parentid-flags, lower-case hex, non-zero ids), or ""
// when it is absent or malformed: only a value that passes is ever
// logged. A later version's extra fields are dropped.
func traceParent(v string) string {
	if len(v) < 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' {
		return ""
	}
	if len(v) > 55 && (v[:2] == "00" || v[55] != '-') {
		return ""
	}
	if !lowerHex(v[:2]) || v[:2] == "ff" || !lowerHex(v[3:35]) || !lowerHex(v[36:52]) || !lowerHex(v[53:55]) {
		return ""
	}
	if strings.Trim(v[3:35], "0") == "" || strings.Trim(v[36:52], "0") == "" {
		return ""
	}
	return v[:55]
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// errPanic is the Err of a request whose handler panicked; the value and
// the stack are in Outcome.Panic.
var errPanic = errors.New("handler panicked")

// exchange is the state of one request on its way through the pipeline.
type exchange struct {
	s          *Server
	r          *Request
	o          *Outcome
	d          *decoded
	reg        *registry
	call       Call
	acceptsSSE bool
	version    string
	legacy     bool

	// principal and scopes are what the bearer token established, when
	// the endpoint is protected (Options.Auth).
	principal string
	scopes    []string

	// resultBytes is the result object of the response, for an
	// idempotency claim to store; inputRequired marks it as a round that
	// asked for input, which is not stored.
	resultBytes   []byte
	inputRequired bool

	// redeemID names the request's single-use state, once opened, and
	// redemption is its redemption in progress (redeemState). retryable
	// says the answer is one its retry may change: a RetryLater tool
	// failure or a retryable refusal, which release the redemption.
	redeemID   string
	redemption Redemption
	retryable  bool
}

func (s *Server) handle(ctx context.Context, r *Request, o *Outcome) (resp *Response) {
	x := &exchange{s: s, r: r, o: o, reg: s.reg.Load()}
	defer func() {
		if p := recover(); p != nil {
			// The panic value may hold the call's arguments: it is kept
			// apart from Err, for the logger to record by type.
			o.Panic = &Panic{Value: p, Stack: debug.Stack()}
			o.Err = errPanic
			o.ErrFromTool = true
			var id json.RawMessage
			if x.d != nil {
				id = x.d.id
			}
			resp = x.refuse(id, mcperr.New(mcperr.Internal))
		}
	}()
	if e := x.transportChecks(); e != nil {
		return x.refuse(nil, e)
	}
	if r.Unidentified {
		return x.refuse(nil, mcperr.New(mcperr.Unauthorized))
	}
	decodeStart := time.Now()
	d, e := decodeMessage(r.Body)
	o.Steps.Decode = time.Since(decodeStart)
	if e != nil {
		var id json.RawMessage
		if d != nil {
			id = d.id
		}
		return x.refuse(id, e)
	}
	x.d = d
	o.Method = d.method
	if e := x.authenticate(ctx); e != nil {
		return x.refuse(d.id, e)
	}
	if d.id == nil {
		// A notification. The core defines none over HTTP; a legacy
		// client's notifications/initialized and any other notification
		// are accepted and ignored.
		return &Response{Status: http.StatusAccepted, Header: http.Header{}}
	}
	return x.request(ctx)
}

func (x *exchange) transportChecks() *mcperr.Error {
	r := x.r
	if r.Method != http.MethodPost {
		return mcperr.New(mcperr.MethodNotAllowed)
	}
	if !x.s.originAllowed(r.Header.Get("Origin"), r.Host) {
		return mcperr.New(mcperr.ForbiddenOrigin)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		// JSON is UTF-8 (RFC 8259 §8.1): a body declared in another
		// charset would be read as what it is not.
		mt, params, err := mime.ParseMediaType(ct)
		if cs, ok := params["charset"]; err != nil || mt != "application/json" || ok && !strings.EqualFold(cs, "utf-8") {
			return mcperr.New(mcperr.UnsupportedMediaType)
		}
	}
	json, sse := acceptable(r.Header.Values("Accept"))
	if !json {
		return mcperr.New(mcperr.NotAcceptable)
	}
	x.acceptsSSE = sse
	if int64(len(r.Body)) > x.s.opts.MaxBodyBytes {
		return mcperr.New(mcperr.BodyTooLarge)
	}
	return nil
}

// acceptable reports whether the Accept header admits a JSON response and
// a server-sent event stream. No Accept header admits both.
func acceptable(vals []string) (jsonOK, sseOK bool) {
	if len(vals) == 0 {
		return true, true
	}
	if len(vals) == 1 && (vals[0] == "application/json, text/event-stream" || vals[0] == "text/event-stream, application/json") {
		return true, true
	}
	for _, v := range vals {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || params["q"] == "0" {
				continue
			}
			switch mt {
			case "*/*":
				jsonOK, sseOK = true, true
			case "application/*", "application/json":
				jsonOK = true
			case "text/*", "text/event-stream":
				sseOK = true
			}
		}
	}
	return jsonOK, sseOK
}

// originAllowed applies the Origin rule: no Origin is allowed (not a
// browser); an allow-listed origin is allowed; a loopback origin is
// allowed when the endpoint is served on a loopback host. Everything else,
// including a browser page whose DNS name was rebound to this server, is
// refused.
func (s *Server) originAllowed(origin, host string) bool {
	if origin == "" {
		return true
	}
	for _, a := range s.opts.AllowedOrigins {
		if a == "*" || strings.EqualFold(a, origin) {
			return true
		}
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return isLoopbackHost(host) && isLoopbackHost(u.Host)
}

func isLoopbackHost(hostport string) bool {
	h := hostport
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// refuse answers with the JSON-RPC error for e.
func (x *exchange) refuse(id json.RawMessage, e *mcperr.Error) *Response {
	x.retryable = e.Retryable()
	x.o.Code = e.Code()
	x.o.Kind = e.Kind().String()
	if e.ServerFault() {
		x.o.Fault = true
	}
	if x.o.Err == nil {
		x.o.Err = e.Unwrap()
	}
	status := e.HTTPStatus()
	if x.legacy {
		status = e.LegacyHTTPStatus()
	}
	h := http.Header{"Content-Type": {"application/json"}}
	switch e.Kind() {
	case mcperr.MethodNotAllowed:
		h.Set("Allow", http.MethodPost)
	case mcperr.InsufficientScope, mcperr.Unauthorized:
		if c := e.Challenge(); c != "" {
			h.Set("WWW-Authenticate", c)
		}
	}
	if d := e.RetryAfter(); d > 0 {
		h.Set("Retry-After", fmt.Sprint(int((d+time.Second-1)/time.Second)))
	}
	return &Response{Status: status, Header: h, Body: appendError(nil, id, e)}
}

// request routes a request by era and runs the protocol checks in the
// order of the architecture: _meta shape, headers, version, method.
func (x *exchange) request(ctx context.Context) *Response {
	d := x.d
	hv, hvPresent, hvOK := headerValue(x.r.Header, headerProtocolVersion)
	meta := d.meta()
	if d.metaErr != nil {
		return x.refuse(d.id, mcperr.Wrap(mcperr.MalformedMeta, d.metaErr))
	}
	x.call.Principal = x.r.Principal
	if x.principal != "" {
		x.call.Principal = x.principal
	}
	if x.call.Principal == "" {
		x.call.Principal = Anonymous
	}

	if meta != nil && meta.ProtocolVersion != nil {
		return x.modern(ctx, hv, hvPresent && hvOK)
	}
	// No protocol version in _meta: a legacy client, or a malformed modern
	// request. The header tells them apart.
	switch {
	case d.method == "initialize":
		x.legacy = true
		if !x.headersAgree(false) {
			return x.refuse(d.id, mcperr.New(mcperr.HeaderMismatch))
		}
		return x.initialize(ctx)
	case hvPresent && hvOK && isModern(hv):
		return x.refuse(d.id, mcperr.New(mcperr.MalformedMeta))
	case !hvPresent:
		x.version = "2025-03-26"
	case hvOK && isLegacy(hv):
		x.version = hv
	default:
		x.legacy = true
		return x.refuse(d.id, mcperr.NewUnsupportedVersion(hv, supportedVersions))
	}
	x.legacy = true
	x.call.legacy = true
	x.call.logLevel = x.s.legacyLogLevel()
	x.call.ProtocolVersion = x.version
	x.o.Version = x.version
	// A legacy client need not send the MCP headers; when it does, they
	// must agree with the body, as a gateway may route or authorize on
	// them.
	if !x.headersAgree(false) {
		return x.refuse(d.id, mcperr.New(mcperr.HeaderMismatch))
	}
	if meta != nil && meta.ProgressToken != nil {
		x.call.progressToken = progressToken(meta.ProgressToken)
	}
	return x.dispatch(ctx)
}

func (x *exchange) modern(ctx context.Context, hv string, hvOK bool) *Response {
	d, meta := x.d, x.d.meta()
	pv, ok := jsonString(meta.ProtocolVersion)
	if !ok || !isObject(meta.ClientCapabilities) {
		return x.refuse(d.id, mcperr.New(mcperr.MalformedMeta))
	}
	if !hvOK || hv != pv || !x.headersAgree(true) {
		return x.refuse(d.id, mcperr.New(mcperr.HeaderMismatch))
	}
	switch {
	case isModern(pv):
	case isLegacy(pv):
		x.legacy = true
		x.call.legacy = true
		x.call.logLevel = x.s.legacyLogLevel()
	default:
		return x.refuse(d.id, mcperr.NewUnsupportedVersion(pv, supportedVersions))
	}
	x.version = pv
	x.o.Version = pv
	x.call.ProtocolVersion = pv
	x.call.capsRaw = meta.ClientCapabilities
	if meta.ClientInfo != nil {
		var ci Implementation
		if json.Unmarshal(meta.ClientInfo, &ci) == nil {
			x.call.ClientInfo = &ci
		}
	}
	if lv, ok := jsonString(meta.LogLevel); ok && LoggingLevel(lv).rank() > 0 {
		x.call.logLevel = LoggingLevel(lv)
	}
	if meta.ProgressToken != nil {
		x.call.progressToken = progressToken(meta.ProgressToken)
	}
	return x.dispatch(ctx)
}

// progressToken keeps a token that is a string or a number.
func progressToken(raw json.RawMessage) json.RawMessage {
	if validID(raw) {
		return raw
	}
	return nil
}

// dispatch runs the method, through the method table. Methods the table
// does not have, methods of the other era, and methods of a feature the
// server does not advertise are unknown.
func (x *exchange) dispatch(ctx context.Context) *Response {
	d := x.d
	m := x.served(d.method)
	if m == nil {
		return x.refuse(d.id, mcperr.New(mcperr.UnknownMethod))
	}
	if d.paramsErr != nil && d.method != "initialize" {
		return x.refuse(d.id, mcperr.Wrap(mcperr.MalformedParams, d.paramsErr))
	}
	return m.serve(x, ctx)
}

// ping answers a legacy ping.
func (x *exchange) ping(context.Context) *Response {
	return x.result(struct{}{}, &resultFields{})
}

// setLevel accepts a legacy logging/setLevel and does not remember it:
// there is no session to hold it. Legacy requests get log messages at the
// server's LegacyLogLevel, which the 2025 revisions allow.
func (x *exchange) setLevel(context.Context) *Response {
	p := x.d.params.(*setLevelParams)
	if p.Level == nil || LoggingLevel(*p.Level).rank() == 0 {
		return x.refuse(x.d.id, mcperr.New(mcperr.MalformedParams))
	}
	return x.result(struct{}{}, &resultFields{})
}

// subscribe answers a legacy resources/subscribe or unsubscribe. Updates
// would travel on the GET stream this endpoint does not offer, so
// subscribe is not advertised; a client that subscribes anyway is
// answered and gets no updates.
func (x *exchange) subscribe(context.Context) *Response {
	if x.d.params.(*subscribeParams).URI == nil {
		return x.refuse(x.d.id, mcperr.New(mcperr.MalformedParams))
	}
	return x.result(struct{}{}, &resultFields{})
}

// result answers with result v, decorated for the era.
func (x *exchange) result(v any, f *resultFields) *Response {
	f.modern = !x.legacy
	body, err := x.s.appendResult(make([]byte, 0, 512), x.d.id, v, f)
	if err != nil {
		return x.refuse(x.d.id, mcperr.Wrap(mcperr.Internal, fmt.Errorf("encoding result: %w", err)))
	}
	x.resultBytes = body[len(`{"jsonrpc":"2.0","id":`)+len(x.d.id)+len(`,"result":`) : len(body)-1]
	return x.respond(body)
}

// respond sends a response message, as a server-sent event stream after
// the request's notifications when there are any and the client accepts
// a stream, else as JSON.
func (x *exchange) respond(msg []byte) *Response {
	notes := x.call.notes
	if len(notes) == 0 || !x.acceptsSSE {
		return &Response{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}, Body: msg}
	}
	n := len(msg) + 32
	for _, m := range notes {
		n += len(m) + 32
	}
	body := make([]byte, 0, n)
	for _, m := range notes {
		body = appendEvent(body, m)
	}
	body = appendEvent(body, msg)
	return &Response{Status: http.StatusOK, Header: http.Header{
		"Content-Type":      {"text/event-stream"},
		"Cache-Control":     {"no-cache"},
		"X-Accel-Buffering": {"no"},
	}, Body: body}
}

// handlerError maps what a prompt, resource or completion handler
// returned as its error to a refusal.
func handlerError(ctx context.Context, err error) *mcperr.Error {
	var me *mcperr.Error
	var te *mcperr.ToolError
	switch {
	case errors.As(err, &me):
		return me
	case errors.As(err, &te):
		return mcperr.NewHandlerFailed(te.Text(), err)
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return mcperr.Wrap(mcperr.Timeout, err)
	}
	return mcperr.NewHandlerFailed(err.Error(), err)
}

// Refusal returns the response that refuses a request with e, for a
// transport that rejects a request before it can be handed to Handle (an
// event whose body does not decode, say). The response carries no id.
func (s *Server) Refusal(e *mcperr.Error) *Response {
	return (&exchange{s: s, o: &Outcome{}}).refuse(nil, e)
}
