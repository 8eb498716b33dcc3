package rie

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strings"
	"time"
	"unicode/utf8"
)

// Front is a loopback HTTP front for a function under the emulator: it
// turns each HTTP request into the event its Door sends, invokes the
// function, and turns the function's response back into HTTP, applying
// on both ways what that door is documented (or reported) to do.
// Invocations are serialised, since the emulator serves one at a time. It
// is a test tool, not part of the deployed product.
type Front struct {
	Emulator Invoker
	// Door is the door the front stands in for; the zero value is the
	// template's buffered door, the HTTP API.
	Door Door
	// Parameters are the HTTP API integration's response parameters; nil
	// is the template's (TemplateResponseParameters), an empty map none.
	Parameters ResponseParameters
	// Timeout, if set, replaces the door's integration timeout.
	Timeout time.Duration
	// REST is what the template deploys on a RESTAPI door beyond the
	// integration.
	REST REST
}

// Invoker invokes a function and returns its response payload: an
// Emulator.
type Invoker interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

type v2Event struct {
	Version         string            `json:"version"`
	RouteKey        string            `json:"routeKey"`
	RawPath         string            `json:"rawPath"`
	RawQueryString  string            `json:"rawQueryString"`
	Cookies         []string          `json:"cookies,omitempty"`
	Headers         map[string]string `json:"headers"`
	RequestContext  v2Context         `json:"requestContext"`
	Body            string            `json:"body,omitempty"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
}

type v2Context struct {
	RequestID  string        `json:"requestId"`
	Authorizer *v2Authorizer `json:"authorizer,omitempty"`
	DomainName string        `json:"domainName"`
	Stage      string        `json:"stage"`
	HTTP       struct {
		Method   string `json:"method"`
		Path     string `json:"path"`
		Protocol string `json:"protocol"`
		SourceIP string `json:"sourceIp"`
	} `json:"http"`
}

// v2Authorizer is a Lambda authorizer's context in a payload 2.0 event.
type v2Authorizer struct {
	Lambda map[string]string `json:"lambda"`
}

// v2Response is a Lambda proxy response, of either payload format (1.0
// adds multiValueHeaders, 2.0 cookies).
type v2Response struct {
	StatusCode        int                 `json:"statusCode"`
	Headers           map[string]string   `json:"headers"`
	MultiValueHeaders map[string][]string `json:"multiValueHeaders"`
	Cookies           []string            `json:"cookies"`
	Body              string              `json:"body"`
	IsBase64Encoded   bool                `json:"isBase64Encoded"`
}

// ServeHTTP implements http.Handler.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, f.Door)
	if !ok {
		return
	}
	payload, ok := f.Door.event(r.Context(), w, r, body, EventOptions{}, f.REST, f.Emulator.Invoke)
	if !ok {
		return
	}
	timeout := f.Timeout
	if timeout == 0 {
		timeout = f.Door.Timeout()
	}
	// The invocation runs to its end even if the client goes away or the
	// door stops waiting (as on Lambda): the emulator serves one
	// invocation at a time and crashes if a second starts while the first
	// still runs.
	type answer struct {
		out []byte
		err error
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), timeout+time.Minute)
		defer cancel()
		out, err := f.Emulator.Invoke(ctx, payload)
		done <- answer{out, err}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a := <-done:
		if a.err != nil {
			http.Error(w, "front: "+a.err.Error(), http.StatusBadGateway)
			return
		}
		f.Door.writeResponse(w, a.out, f.Parameters)
	case <-timer.C:
		f.Door.timedOut(w)
	}
}

// readBody reads a request's body within the door's limit, answering 413
// over it.
func readBody(w http.ResponseWriter, r *http.Request, d Door) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, d.maxRequest()))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			d.tooLarge(w)
		} else {
			http.Error(w, "front: reading the body: "+err.Error(), http.StatusBadRequest)
		}
		return nil, false
	}
	return body, true
}

// event builds the door's event for a request, answering as the door
// would a request it does not pass on: a REST API path outside its stage
// or resources, a well-known URL its mock integration answers, a request
// its authorizer refuses (invoke invokes the function as the
// authorizer).
func (d Door) event(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte, o EventOptions, rest REST,
	invoke func(context.Context, []byte) ([]byte, error)) ([]byte, bool) {
	var payload []byte
	var err error
	switch d {
	case RESTAPI:
		path, to := rest.route(r)
		switch to {
		case routeNone:
			// API Gateway's answer for a path no resource of the stage
			// matches.
			d.refusal(w, http.StatusForbidden, "Missing Authentication Token")
			return nil, false
		case routeMetadata:
			rest.answerMetadata(w, rest.Metadata)
			return nil, false
		case routeASMetadata:
			rest.answerMetadata(w, rest.ASMetadata)
			return nil, false
		}
		if rest.Authorizer != nil && to != routeRegister {
			if rest.AuthorizerFunction != nil {
				invoke = rest.AuthorizerFunction.Invoke
			}
			principal, ok := rest.authorize(ctx, w, r, path, invoke)
			if !ok {
				return nil, false
			}
			o.Principal = principal
		}
		payload, err = NewRESTEvent(r, body, o)
	case FunctionURL:
		if o.DomainName == "" {
			o.DomainName = StreamDomain
		}
		payload, err = NewEvent(r, body, o)
	default:
		payload, err = NewEvent(r, body, o)
	}
	if err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusInternalServerError)
		return nil, false
	}
	return payload, true
}

// EventOptions say what NewEvent puts in an event beyond the request.
// The zero value is what Front sends.
type EventOptions struct {
	// RequestID is API Gateway's request id (requestContext.requestId),
	// which the function logs as gateway_request_id: a front that gives
	// each request its own can find the request's log line. Empty:
	// "front".
	RequestID string
	// Principal, if set, is a Lambda authorizer's principal id
	// (requestContext.authorizer.lambda.principalId), so that one front
	// can serve several callers, each with notes and claims of its own,
	// as a gateway with an authorizer does. Empty: no authorizer, the
	// anonymous caller.
	Principal string
	// DomainName, if set, is requestContext.domainName (a function URL's
	// makes the event a function URL's); empty: the request's Host.
	DomainName string
}

func (o EventOptions) requestID() string {
	if o.RequestID != "" {
		return o.RequestID
	}
	return "front"
}

func (o EventOptions) domainName(r *http.Request) string {
	if o.DomainName != "" {
		return o.DomainName
	}
	return r.Host
}

// eventBody is a request body as an event carries it: the text itself,
// or base64 when it is not UTF-8.
func eventBody(body []byte) (string, bool) {
	if utf8.Valid(body) {
		return string(body), false
	}
	return base64.StdEncoding.EncodeToString(body), true
}

// NewEvent turns an HTTP request whose body was read into an API Gateway
// HTTP API (payload 2.0) event, as API Gateway would.
func NewEvent(r *http.Request, body []byte, o EventOptions) ([]byte, error) {
	ev := v2Event{Version: "2.0", RouteKey: r.Method + " " + r.URL.Path, RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery,
		Headers: map[string]string{}}
	for k, vs := range r.Header {
		if k == "Cookie" {
			// Payload 2.0 carries the request's cookies in cookies, one
			// an item ("Working with AWS Lambda proxy integrations for
			// HTTP APIs": "Format 2.0 ... includes a new cookies field").
			for _, line := range vs {
				for _, c := range strings.Split(line, ";") {
					if c = strings.TrimSpace(c); c != "" {
						ev.Cookies = append(ev.Cookies, c)
					}
				}
			}
			continue
		}
		// API Gateway lower-cases names and joins repeated values.
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	ev.Headers["host"] = r.Host
	ev.RequestContext.RequestID = o.requestID()
	if o.Principal != "" {
		ev.RequestContext.Authorizer = &v2Authorizer{Lambda: map[string]string{"principalId": o.Principal}}
	}
	ev.RequestContext.DomainName = o.domainName(r)
	ev.RequestContext.Stage = "$default"
	ev.RequestContext.HTTP.Method = r.Method
	ev.RequestContext.HTTP.Path = r.URL.Path
	ev.RequestContext.HTTP.Protocol = r.Proto
	ev.RequestContext.HTTP.SourceIP = "127.0.0.1"
	ev.Body, ev.IsBase64Encoded = eventBody(body)
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encoding the event: %w", err)
	}
	return payload, nil
}

// restResource is the one resource of the REST door whose integration is
// the function (the template's StreamMcpResource).
const restResource = "/mcp"

// v1Request is what a REST API tells the function of a request, in a
// Lambda proxy event (payload format 1.0) and in a Lambda REQUEST
// authorizer's event alike.
type v1Request struct {
	Resource                        string              `json:"resource"`
	Path                            string              `json:"path"`
	HTTPMethod                      string              `json:"httpMethod"`
	Headers                         map[string]string   `json:"headers"`
	MultiValueHeaders               map[string][]string `json:"multiValueHeaders"`
	QueryStringParameters           map[string]string   `json:"queryStringParameters"`
	MultiValueQueryStringParameters map[string][]string `json:"multiValueQueryStringParameters"`
	RequestContext                  v1Context           `json:"requestContext"`
}

// newV1Request describes r, whose resource path is path, as API Gateway
// does: each header's last value in headers and all of them in
// multiValueHeaders, the query likewise, the stage in the request
// context with the path as sent.
func newV1Request(r *http.Request, path string, o EventOptions) v1Request {
	v := v1Request{Resource: path, Path: path, HTTPMethod: r.Method, Headers: map[string]string{}, MultiValueHeaders: map[string][]string{}}
	for k, vs := range r.Header {
		v.Headers[k], v.MultiValueHeaders[k] = vs[len(vs)-1], vs
	}
	v.Headers["Host"], v.MultiValueHeaders["Host"] = r.Host, []string{r.Host}
	if q := r.URL.Query(); len(q) > 0 {
		v.QueryStringParameters, v.MultiValueQueryStringParameters = map[string]string{}, q
		for k, vs := range q {
			v.QueryStringParameters[k] = vs[len(vs)-1]
		}
	}
	v.RequestContext = v1Context{ResourcePath: path, HTTPMethod: r.Method, Path: r.URL.Path, Stage: RESTStage,
		DomainName: o.domainName(r), RequestID: o.requestID(), Identity: map[string]string{"sourceIp": "127.0.0.1"}}
	return v
}

// v1Event is a REST API's Lambda proxy event (payload format 1.0).
type v1Event struct {
	v1Request
	Body            *string `json:"body"`
	IsBase64Encoded bool    `json:"isBase64Encoded"`
}

type v1Context struct {
	ResourcePath string            `json:"resourcePath"`
	HTTPMethod   string            `json:"httpMethod"`
	Path         string            `json:"path"`
	Stage        string            `json:"stage"`
	DomainName   string            `json:"domainName"`
	RequestID    string            `json:"requestId"`
	Identity     map[string]string `json:"identity"`
	Authorizer   map[string]string `json:"authorizer,omitempty"`
}

// NewRESTEvent turns an HTTP request to the REST door (its path begins
// with the stage) into a REST API Lambda proxy event, as API Gateway
// would: the path without the stage, the stage in the request context
// with the path as sent, each header's last value in headers and all of
// them in multiValueHeaders.
func NewRESTEvent(r *http.Request, body []byte, o EventOptions) ([]byte, error) {
	ev := v1Event{v1Request: newV1Request(r, strings.TrimPrefix(r.URL.Path, "/"+RESTStage), o)}
	if o.Principal != "" {
		ev.RequestContext.Authorizer = map[string]string{"principalId": o.Principal}
	}
	if len(body) > 0 {
		b, base64ed := eventBody(body)
		ev.Body, ev.IsBase64Encoded = &b, base64ed
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encoding the event: %w", err)
	}
	return payload, nil
}

// WriteResponse writes a function's API Gateway response payload as the
// HTTP response, as the template's HTTP API would (Front with the HTTPAPI
// door).
func WriteResponse(w http.ResponseWriter, out []byte) {
	HTTPAPI.writeResponse(w, out, nil)
}

// writeResponse writes a function's response payload as the door would: a
// payload that is not a proxy response, or one over Lambda's 6 MB, is the
// door's own 5xx; the headers (a REST response's headers and
// multiValueHeaders merged) are renamed as the door renames them, and the
// HTTP API's response parameters applied (nil: the template's).
func (d Door) writeResponse(w http.ResponseWriter, out []byte, params ResponseParameters) {
	var resp v2Response
	if len(out) > lambdaMaxSyncPayload || json.Unmarshal(out, &resp) != nil {
		d.badResponse(w)
		return
	}
	respBody := []byte(resp.Body)
	if resp.IsBase64Encoded {
		var err error
		if respBody, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			d.badResponse(w)
			return
		}
	}
	fn := http.Header{}
	for k, v := range resp.Headers {
		fn.Set(k, v)
	}
	if d == RESTAPI {
		// "If you specify values for both headers and multiValueHeaders,
		// API Gateway merges them into a single list. If the same
		// key-value pair is specified in both, only the values from
		// multiValueHeaders will appear" (API Gateway developer guide,
		// "Output format of a Lambda function for proxy integration").
		for k, vs := range resp.MultiValueHeaders {
			fn[textproto.CanonicalMIMEHeaderKey(k)] = vs
		}
	}
	status := resp.StatusCode
	if status == 0 {
		status = http.StatusOK
	}
	status, err := d.writeHead(w, status, fn, params)
	if err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusInternalServerError) // a test's mapping, not the request, is wrong
		return
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	w.WriteHeader(status)
	w.Write(respBody)
}

// writeHead puts the function's headers fn in w as the door passes them
// on, and returns the status the door answers with.
func (d Door) writeHead(w http.ResponseWriter, status int, fn http.Header, params ResponseParameters) (int, error) {
	h := fn.Clone()
	d.remap(h)
	if d == HTTPAPI {
		if params == nil {
			params = TemplateResponseParameters()
		}
		var err error
		if status, err = params.apply(status, fn, h); err != nil {
			return 0, err
		}
	}
	for k, vs := range h {
		w.Header()[k] = vs
	}
	return status, nil
}
