// Package apigw serves a [stateless.Server] to AWS Lambda invocations from
// API Gateway HTTP APIs (payload format 2.0), REST API proxy integrations
// (payload format 1.0) and Lambda function URLs.
//
// It is kept apart from the protocol core so that the core never imports
// Lambda types: this package turns an event into a [stateless.Request] —
// method, the headers the protocol reads with canonical names (gateways
// lower-case them; REST APIs also send multi-value headers; cookies are
// joined into one Cookie header), the base64-decoded body, the host, and
// the caller's principal from the request context's authorizer or IAM
// identity, namespaced by its source (see principal) — and the
// [stateless.Response] back into the event's response shape. A request
// an authorizer let through without a usable identity is marked
// Unidentified, which the server refuses; it is never the anonymous
// caller.
//
// [Handler] implements lambda.Handler on raw payloads, so one function
// serves all three event shapes without reflection.
package apigw

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Kind is the shape of an event.
type Kind uint8

// The event shapes served.
const (
	KindUnknown     Kind = iota
	KindHTTPAPI          // API Gateway HTTP API, payload format 2.0
	KindREST             // API Gateway REST API proxy integration, payload format 1.0
	KindFunctionURL      // Lambda function URL (payload format 2.0)
)

func (k Kind) String() string {
	switch k {
	case KindHTTPAPI:
		return "http-api"
	case KindREST:
		return "rest"
	case KindFunctionURL:
		return "function-url"
	}
	return "unknown"
}

// event is the union of the three request shapes, read in one pass by
// decodeEvent (event.set names the members each field is read from).
type event struct {
	Version           string
	HTTPMethod        string        // 1.0
	MultiValueHeaders *headerObject // 1.0; its values win over Headers' in any order
	Headers           *headerObject
	Cookies           []string // 2.0
	RawQueryString    string   // 2.0
	// MultiValueQuery is 1.0's multiValueQueryStringParameters (its
	// values win over Query's, which hold only the last of repeated
	// ones).
	MultiValueQuery map[string][]string
	Query           map[string]string // 1.0
	Body            body
	IsBase64Encoded bool
	RequestContext  requestContext
}

// requestContext is an event's request context. It is read member by
// member, by the exact names the gateways send (a member of the wrong
// type fails the decoding, as encoding/json would fail it).
type requestContext struct {
	RequestID  string
	DomainName string
	HTTPMethod string // 1.0
	Path       string // 1.0, with the stage
	HTTP       struct {
		Method   string
		Path     string
		SourceIP string // the address the gateway saw the request from
	} // 2.0
	// The members the principal is read from (see principal); nil when
	// absent or null.
	Authorizer json.RawMessage
	Identity   json.RawMessage // 1.0 (IAM)
	// ambiguous: authorizer or identity occurs twice, or in another case
	// (no gateway sends either); the request is unidentified.
	ambiguous bool
}

// errMemberType is the error for an event member (at its top level or in
// its request context) of the wrong type.
var errMemberType = errors.New("apigw: event member of the wrong type")

// UnmarshalJSON reads a request context. b is valid JSON: decodeEvent's
// tokenizer has read it.
func (c *requestContext) UnmarshalJSON(b []byte) error {
	if !isObject(b) {
		if string(b) == "null" {
			return nil
		}
		return errMemberType
	}
	var err error
	var seen [2]bool
	jsonscan.Members(b, func(name, value []byte) bool {
		switch string(name) {
		case "requestId":
			err = setString(&c.RequestID, value)
		case "domainName":
			err = setString(&c.DomainName, value)
		case "httpMethod":
			err = setString(&c.HTTPMethod, value)
		case "path":
			err = setString(&c.Path, value)
		case "http":
			if string(value) == "null" {
				break
			}
			if !jsonscan.Members(value, func(name, value []byte) bool {
				switch string(name) {
				case "method":
					err = setString(&c.HTTP.Method, value)
				case "path":
					err = setString(&c.HTTP.Path, value)
				case "sourceIp":
					err = setString(&c.HTTP.SourceIP, value)
				}
				return err == nil
			}) && err == nil {
				err = errMemberType
			}
		case "authorizer", "identity":
			i, field := 0, &c.Authorizer
			if name[0] == 'i' {
				i, field = 1, &c.Identity
			}
			c.ambiguous = c.ambiguous || seen[i]
			seen[i] = true
			if string(value) != "null" {
				*field = bytes.Clone(value) // value is the tokenizer's, reused
			}
		default:
			if strings.EqualFold(string(name), "authorizer") || strings.EqualFold(string(name), "identity") {
				c.ambiguous = true
			}
		}
		return err == nil
	})
	return err
}

// setString sets *dst to the JSON string value; null leaves it as it is.
func setString(dst *string, value []byte) error {
	if string(value) == "null" {
		return nil
	}
	s, ok := stringValue(value)
	if !ok {
		return errMemberType
	}
	*dst = s
	return nil
}

// body is an event's body: the JSON string's text, unescaped straight
// into bytes (one copy, where a string and a conversion would make two).
type body []byte

// UnmarshalJSON reads the body's JSON string (or null).
func (b *body) UnmarshalJSON(q []byte) error {
	if len(q) == 0 || q[0] != '"' {
		if string(q) == "null" {
			return nil
		}
		return errors.New("apigw: body is not a string")
	}
	*b = jsonscan.AppendUnquoted(make([]byte, 0, len(q)-2), q)
	return nil
}

// Request is an event turned into a protocol request.
type Request struct {
	Kind      Kind
	RequestID string // API Gateway's request id, for logs
	// Domain and Path are where the gateway says the request was sent
	// (its domain name, and the path with the stage).
	Domain, Path string
	*stateless.Request
}

// ErrNotHTTP is returned for a payload that is none of the served event
// shapes: a direct invocation with some other payload. The function fails
// the invocation rather than guessing.
var ErrNotHTTP = errors.New("apigw: payload is not an API Gateway or function URL event")

// eventOptions read an event as encoding/json would accept it: a
// duplicate name and invalid UTF-8 in a string a client sent are accepted
// (the body inside is read strictly, later, by the server).
var eventOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// eventReader is a reusable tokenizer over an event payload; one is taken
// from eventReaders per event.
type eventReader struct {
	buf  bytes.Buffer // a jsontext.Decoder reads a *bytes.Buffer in place
	dec  jsontext.Decoder
	name []byte // an escaped member name, unquoted
}

// eventReaders holds idle eventReaders (a tokenizer's buffers are worth
// keeping: every invocation reads an event).
var eventReaders = sync.Pool{New: func() any { return new(eventReader) }}

// decodeEvent reads an event's members into ev in one validating pass
// over its top level, matching their names as encoding/json matches a
// struct's (in any case, as strings.EqualFold compares them; of members
// that match one field, the last wins). Only the fields the endpoint
// reads are kept: an event's other members (route keys, stage variables,
// a REST event's multi-value query) are tokenized and skipped.
func decodeEvent(payload []byte, ev *event) error {
	er := eventReaders.Get().(*eventReader)
	defer func() {
		er.buf = bytes.Buffer{} // keep no reference to the payload
		er.dec.Reset(&er.buf)
		eventReaders.Put(er)
	}()
	er.buf = *bytes.NewBuffer(payload)
	dec := &er.dec
	dec.Reset(&er.buf, eventOptions...)
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case 'n':
		// null: an event with no members, refused by its caller
	case '{':
		for dec.PeekKind() == '"' {
			raw, err := dec.ReadValue()
			if err != nil {
				return err
			}
			name := raw[1 : len(raw)-1]
			if bytes.IndexByte(name, '\\') >= 0 {
				er.name, _ = jsontext.AppendUnquote(er.name[:0], raw)
				name = er.name
			}
			value, err := dec.ReadValue()
			if err != nil {
				return err
			}
			if err := ev.set(name, value); err != nil {
				return err
			}
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
	default:
		return errors.New("apigw: event is not a JSON object")
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return errors.New("apigw: data after the event")
	}
	return nil
}

// set reads value into the field that the member name selects, if any.
// value is only valid until the next read: every field copies what it
// keeps.
func (ev *event) set(name, value []byte) error {
	switch {
	case fieldIs(name, "version"):
		return setString(&ev.Version, value)
	case fieldIs(name, "httpMethod"):
		return setString(&ev.HTTPMethod, value)
	case fieldIs(name, "requestContext"):
		return ev.RequestContext.UnmarshalJSON(value)
	case fieldIs(name, "multiValueHeaders"):
		return ev.MultiValueHeaders.UnmarshalJSON(value)
	case fieldIs(name, "headers"):
		return ev.Headers.UnmarshalJSON(value)
	case fieldIs(name, "cookies"):
		ev.Cookies = nil
		return jsonv2.Unmarshal(value, &ev.Cookies)
	case fieldIs(name, "rawQueryString"):
		return setString(&ev.RawQueryString, value)
	case fieldIs(name, "multiValueQueryStringParameters"):
		ev.MultiValueQuery = nil
		return jsonv2.Unmarshal(value, &ev.MultiValueQuery)
	case fieldIs(name, "queryStringParameters"):
		ev.Query = nil
		return jsonv2.Unmarshal(value, &ev.Query)
	case fieldIs(name, "body"):
		return ev.Body.UnmarshalJSON(value)
	case fieldIs(name, "isBase64Encoded"):
		switch string(value) {
		case "true", "false":
			ev.IsBase64Encoded = value[0] == 't'
		case "null":
		default:
			return errMemberType
		}
	}
	return nil
}

// query is the event's query string: 2.0's as sent, 1.0's encoded again
// from its parameters (API Gateway decodes them).
func (ev *event) query() string {
	if ev.RawQueryString != "" || (ev.MultiValueQuery == nil && ev.Query == nil) {
		return ev.RawQueryString
	}
	v := url.Values{}
	for k, s := range ev.Query {
		v.Set(k, s)
	}
	for k, vs := range ev.MultiValueQuery {
		v[k] = vs
	}
	return v.Encode()
}

// fieldIs reports whether a member name selects the field named field, as
// encoding/json selects it.
func fieldIs(name []byte, field string) bool {
	return len(name) >= len(field) && strings.EqualFold(string(name), field)
}

// Decode turns an event payload into a request. A gateway event whose
// body cannot be read comes back with an error and with the request as far
// as it was decoded (its Kind, to answer in the event's shape).
func Decode(payload []byte) (*Request, error) {
	h := make(http.Header, 8)
	// Headers are decoded straight into h, keeping only the protocol's
	// (see protocolHeader); multiValueHeaders win over headers, which
	// hold only the last of repeated values.
	ev := event{MultiValueHeaders: &headerObject{h: h, multi: true}, Headers: &headerObject{h: h}}
	if err := decodeEvent(payload, &ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotHTTP, err)
	}
	r := &Request{Request: &stateless.Request{}}
	switch {
	case ev.Version == "2.0" && ev.RequestContext.HTTP.Method != "":
		r.Kind = KindHTTPAPI
		if strings.Contains(ev.RequestContext.DomainName, ".lambda-url.") {
			r.Kind = KindFunctionURL
		}
		r.Method = ev.RequestContext.HTTP.Method
	case ev.HTTPMethod != "":
		r.Kind = KindREST
		r.Method = ev.HTTPMethod
	default:
		return nil, ErrNotHTTP
	}
	r.RequestID = ev.RequestContext.RequestID
	r.Header = h
	if len(ev.Cookies) > 0 {
		r.Header["Cookie"] = []string{strings.Join(ev.Cookies, "; ")}
	}
	r.Host = r.Header.Get("Host")
	if r.Host == "" {
		r.Host = ev.RequestContext.DomainName
	}
	r.Query = ev.query()
	path := ev.RequestContext.HTTP.Path
	if r.Kind == KindREST {
		path = ev.RequestContext.Path
	}
	r.Domain, r.Path = ev.RequestContext.DomainName, path
	r.Endpoint = endpointURL(ev.RequestContext.DomainName, path)
	r.Body = ev.Body
	if ev.IsBase64Encoded {
		dec := make([]byte, base64.StdEncoding.DecodedLen(len(ev.Body)))
		n, err := base64.StdEncoding.Decode(dec, ev.Body)
		if err != nil {
			// The request is returned too: its Kind shapes the refusal.
			return r, fmt.Errorf("apigw: body marked base64 does not decode: %w", err)
		}
		r.Body = dec[:n]
	}
	r.Address = sourceAddress(r.Kind, &ev.RequestContext)
	if ev.RequestContext.ambiguous {
		r.Unidentified = true
	} else {
		r.Principal, r.Unidentified = principal(r.Kind, ev.RequestContext.Authorizer, ev.RequestContext.Identity)
	}
	return r, nil
}

// sourceAddress is the address the gateway saw the request come from —
// requestContext.http.sourceIp (HTTP API, function URL) or
// requestContext.identity.sourceIp (REST API) — as API Gateway and Lambda
// report it: the peer of the connection they accepted, which no header of
// the client's sets (X-Forwarded-For is the client's to write). "" when
// absent or not an IP address.
func sourceAddress(k Kind, c *requestContext) string {
	v := c.HTTP.SourceIP
	if k == KindREST {
		v = ""
		if len(c.Identity) > 0 && isObject(c.Identity) {
			jsonscan.Members(c.Identity, func(name, value []byte) bool {
				if string(name) == "sourceIp" {
					_ = setString(&v, value)
				}
				return true
			})
		}
	}
	ip := net.ParseIP(v)
	if ip == nil {
		return ""
	}
	return ip.String()
}

// endpointURL is the canonical URL of the endpoint an event was addressed
// to, from what the gateway reports (its domain name, custom or not, and
// the path with the stage), never from the client's Host header. "" when
// the gateway reports no usable domain name or path. API Gateway's domain
// names carry no port; a front that is not API Gateway (a local emulator's)
// may name one, which is kept.
func endpointURL(domain, path string) string {
	if domain == "" || len(domain) > 253+6 || path == "" || path[0] != '/' {
		return ""
	}
	host := domain
	if i := strings.LastIndexByte(domain, ':'); i >= 0 {
		host = domain[:i]
		port := domain[i+1:]
		if port == "" || len(port) > 5 || strings.Trim(port, "0123456789") != "" {
			return ""
		}
	}
	if host == "" {
		return ""
	}
	for i := 0; i < len(host); i++ {
		if c := host[i]; !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.') {
			return ""
		}
	}
	for i := 0; i < len(path); i++ {
		if c := path[i]; c <= ' ' || c >= 0x7f || c == '"' || c == '\\' || c == '?' || c == '#' {
			return ""
		}
	}
	return "https://" + strings.ToLower(domain) + path
}

// EndpointAt returns the canonical URL of the endpoint at path on the
// domain the gateway reports, as Decode derives a request's Endpoint (""
// when either is unusable): the endpoint an OAuth document the event asks
// for describes, unless one is configured (auth.EndpointLocator).
func (r *Request) EndpointAt(path string) string { return endpointURL(r.Domain, path) }

// Encode turns a response into the response payload for an event of kind
// k. Bodies are JSON or an event stream, both text, so never base64. The
// payload is written by hand: it is on every invocation's path.
func Encode(k Kind, resp *stateless.Response) ([]byte, error) {
	names := headerNames(resp.Header)
	out := make([]byte, 0, len(resp.Body)+len(resp.Body)/8+128)
	out = appendStatusAndHeaders(out, resp.Status, names, resp.Header)
	if k != KindREST {
		// The 2.0 shapes join a header's values with commas, which a
		// cookie's own may hold: its cookies go apart.
		out = appendCookies(out, resp.Header)
	}
	if cookies := resp.Header[setCookie]; len(names) > 0 || len(cookies) > 0 {
		if k == KindREST {
			names := names
			if len(cookies) > 0 {
				names = append(slices.Clone(names), setCookie)
				slices.Sort(names)
			}
			// REST APIs read multiValueHeaders as well; the 2.0 shapes
			// ignore it.
			out = append(out, `,"multiValueHeaders":{`...)
			for i, name := range names {
				if i > 0 {
					out = append(out, ',')
				}
				out = jsonscan.AppendString(out, name)
				out = append(out, ':', '[')
				for j, v := range resp.Header[name] {
					if j > 0 {
						out = append(out, ',')
					}
					out = jsonscan.AppendString(out, v)
				}
				out = append(out, ']')
			}
			out = append(out, '}')
		}
	}
	out = append(out, `,"body":`...)
	out = jsonscan.AppendString(out, string(resp.Body))
	return append(out, `,"isBase64Encoded":false}`...), nil
}

// appendStatusAndHeaders appends `{"statusCode":N` and, when there are
// names, `,"headers":{...}` with each header's values joined, leaving the
// object open.
func appendStatusAndHeaders(out []byte, status int, names []string, h http.Header) []byte {
	out = append(out, `{"statusCode":`...)
	out = strconv.AppendInt(out, int64(status), 10)
	if len(names) == 0 {
		return out
	}
	out = append(out, `,"headers":{`...)
	for i, name := range names {
		if i > 0 {
			out = append(out, ',')
		}
		out = jsonscan.AppendString(out, name)
		out = append(out, ':')
		out = jsonscan.AppendString(out, strings.Join(h[name], ", "))
	}
	return append(out, '}')
}

// AppendPrelude appends the prelude of a Lambda response stream in the
// HTTP integration response format that function URLs and REST API
// streaming integrations read: the status and the headers as a JSON
// object, then eight NUL bytes; the body follows as it is written.
func AppendPrelude(dst []byte, status int, h http.Header) []byte {
	dst = appendStatusAndHeaders(dst, status, headerNames(h), h)
	dst = appendCookies(dst, h)
	return append(dst, '}', 0, 0, 0, 0, 0, 0, 0, 0)
}

// setCookie is the response header whose values are never joined.
const setCookie = "Set-Cookie"

// headerNames are h's names but Set-Cookie, sorted: the headers object
// joins a name's values, which a cookie's own commas would corrupt, so
// the cookies go in an array of their own (appendCookies), or, on a REST
// API, in multiValueHeaders alone.
func headerNames(h http.Header) []string {
	names := make([]string, 0, len(h))
	for name := range h {
		if name != setCookie {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// appendCookies appends `,"cookies":[...]` with h's Set-Cookie values,
// when it has any: the member the 2.0 payload and the HTTP integration
// response prelude set cookies by.
func appendCookies(out []byte, h http.Header) []byte {
	cookies := h[setCookie]
	if len(cookies) == 0 {
		return out
	}
	out = append(out, `,"cookies":[`...)
	for i, c := range cookies {
		if i > 0 {
			out = append(out, ',')
		}
		out = jsonscan.AppendString(out, c)
	}
	return append(out, ']')
}

// Handler serves a stateless.Server to Lambda. It implements
// lambda.Handler.
type Handler struct {
	Server *stateless.Server
	// Endpoint, if set, is the endpoint's canonical URL (a custom
	// domain's, say), which request state is bound to. Unset, each
	// request's is derived from the event: the domain name and path API
	// Gateway reports.
	Endpoint string
	// Documents, if set, are the endpoint's OAuth documents (package
	// auth's *Documents): an event that asks for one (the
	// protected-resource metadata, the registration facade's metadata, a
	// registration or its preflight) is answered and reported by them,
	// about the endpoint Endpoint names or else the one the gateway's
	// domain and the event's path name; any other is the server's.
	Documents Documents
}

// Documents serve the documents an endpoint answers beside MCP: package
// auth's Documents (the OAuth metadata and the registration facade). It
// is an interface of the door's, so that a function without
// authorization links nothing of package auth (its JOSE library among
// it).
type Documents interface {
	// Serve answers r when it asks for a document, ok false otherwise
	// (see auth.Documents.Serve).
	Serve(ctx context.Context, r *stateless.Request, path, endpoint string, at interface{ EndpointAt(path string) string }) (resp *stateless.Response, ok bool)
}

// Invoke implements lambda.Handler. The context carries the invocation's
// deadline, which the request inherits.
func (h *Handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	r, err := Decode(payload)
	return h.Respond(ctx, r, err)
}

// Respond answers an event Decode has read (its request and error), as
// Invoke does: for a caller that looked at the request first.
func (h *Handler) Respond(ctx context.Context, r *Request, err error) ([]byte, error) {
	return h.RespondEarly(ctx, r, err, nil)
}

// InvokeEarly answers an event as Invoke does, but runs a tool's handler
// on the calling goroutine, and should the handler still be running at
// its deadline, answers the call then, in-band, by calling early with
// the response payload (and Encode's error), from another goroutine, and
// returns nil and no error once the handler returns
// ([stateless.Server.HandleEarly]). Package runner's Lambda runtime calls
// it: it posts an early answer and goes on to the next invocation.
func (h *Handler) InvokeEarly(ctx context.Context, payload []byte, early func([]byte, error)) ([]byte, error) {
	r, err := Decode(payload)
	return h.RespondEarly(ctx, r, err, early)
}

// RespondEarly answers an event Decode has read as InvokeEarly does; with
// early nil, as Respond does.
func (h *Handler) RespondEarly(ctx context.Context, r *Request, err error, early func([]byte, error)) ([]byte, error) {
	if err != nil {
		if errors.Is(err, ErrNotHTTP) || r == nil {
			return nil, err
		}
		// A gateway event whose body cannot be read is the client's
		// fault: answer it as a malformed body.
		return Encode(r.Kind, h.reject(ctx, r, err))
	}
	ctx = withRequest(ctx, r)
	if resp, ok := h.document(ctx, r); ok {
		return Encode(r.Kind, resp)
	}
	if h.Endpoint != "" {
		r.Endpoint = h.Endpoint
	}
	if early == nil {
		return Encode(r.Kind, h.Server.Handle(ctx, r.Request))
	}
	resp := h.Server.HandleEarly(ctx, r.Request, func(resp *stateless.Response) { early(Encode(r.Kind, resp)) })
	if resp == nil {
		return nil, nil
	}
	return Encode(r.Kind, resp)
}

// document answers r when it asks for one of the endpoint's OAuth
// documents (Handler.Documents), which reports the answer.
func (h *Handler) document(ctx context.Context, r *Request) (*stateless.Response, bool) {
	if h.Documents == nil {
		return nil, false
	}
	return h.Documents.Serve(ctx, r.Request, r.Path, h.Endpoint, r)
}

// reject answers an event whose body cannot be read as a malformed body,
// reported as every answer is.
func (h *Handler) reject(ctx context.Context, r *Request, err error) *stateless.Response {
	req := r.Request
	if req == nil {
		req = &stateless.Request{}
	}
	return h.Server.Reject(withRequest(ctx, r), req, mcperr.Wrap(mcperr.KindParseError, err))
}

// InvokeStream answers an event as Invoke does, onto st: a protocol
// request through [stateless.Server.HandleStream], its notifications
// sent as they happen; every other answer (the metadata, a refusal of an
// unreadable event) as one whole response. For the Lambda invocations of
// a response stream: a REST API integration in STREAM mode, a function
// URL in RESPONSE_STREAM mode.
func (h *Handler) InvokeStream(ctx context.Context, payload []byte, st stateless.Stream) error {
	r, err := Decode(payload)
	return h.RespondStream(ctx, r, err, st)
}

// RespondStream answers an event Decode has read onto st, as InvokeStream
// does.
func (h *Handler) RespondStream(ctx context.Context, r *Request, err error, st stateless.Stream) error {
	if err != nil {
		if errors.Is(err, ErrNotHTTP) || r == nil {
			return err
		}
		writeWhole(st, h.reject(ctx, r, err))
		return nil
	}
	ctx = withRequest(ctx, r)
	if resp, ok := h.document(ctx, r); ok {
		writeWhole(st, resp)
		return nil
	}
	if h.Endpoint != "" {
		r.Endpoint = h.Endpoint
	}
	h.Server.HandleStream(ctx, r.Request, st)
	return nil
}

func writeWhole(st stateless.Stream, resp *stateless.Response) {
	if st.Start(resp.Status, resp.Header) == nil {
		_ = st.Write(resp.Body)
	}
}

// withRequest carries r's request id for the observer
// (stateless.WithRequestID), without copying it.
func withRequest(ctx context.Context, r *Request) context.Context {
	return stateless.WithRequestID(ctx, &r.RequestID)
}
