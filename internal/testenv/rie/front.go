package rie

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// Front is a loopback HTTP front for a function under the emulator: it
// turns each HTTP request into an API Gateway HTTP API (payload 2.0)
// event, invokes the function, and turns the function's response back
// into HTTP, as API Gateway would. Invocations are serialised, since the
// emulator serves one at a time. It is a test tool, not part of the
// deployed product.
type Front struct {
	Emulator *Emulator
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

type v2Response struct {
	StatusCode      int               `json:"statusCode"`
	Headers         map[string]string `json:"headers"`
	Cookies         []string          `json:"cookies"`
	Body            string            `json:"body"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
}

// ServeHTTP implements http.Handler.
func (f *Front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 10<<20))
	if err != nil {
		http.Error(w, "front: reading the body: "+err.Error(), http.StatusRequestEntityTooLarge)
		return
	}
	payload, err := NewEvent(r, body, EventOptions{})
	if err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusInternalServerError)
		return
	}
	// The invocation runs to its end even if the client goes away (as on
	// Lambda): the emulator serves one invocation at a time and crashes
	// if a second starts while the first still runs.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 60*time.Second)
	defer cancel()
	out, err := f.Emulator.Invoke(ctx, payload)
	if err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusBadGateway)
		return
	}
	WriteResponse(w, out)
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

// NewEvent turns an HTTP request whose body was read into an API Gateway
// HTTP API (payload 2.0) event, as API Gateway would.
func NewEvent(r *http.Request, body []byte, o EventOptions) ([]byte, error) {
	ev := v2Event{Version: "2.0", RouteKey: r.Method + " " + r.URL.Path, RawPath: r.URL.Path, RawQueryString: r.URL.RawQuery,
		Headers: map[string]string{}}
	for k, vs := range r.Header {
		// API Gateway lower-cases names and joins repeated values.
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	ev.Headers["host"] = r.Host
	ev.RequestContext.RequestID = "front"
	if o.RequestID != "" {
		ev.RequestContext.RequestID = o.RequestID
	}
	if o.Principal != "" {
		ev.RequestContext.Authorizer = &v2Authorizer{Lambda: map[string]string{"principalId": o.Principal}}
	}
	ev.RequestContext.DomainName = r.Host
	if o.DomainName != "" {
		ev.RequestContext.DomainName = o.DomainName
	}
	ev.RequestContext.Stage = "$default"
	ev.RequestContext.HTTP.Method = r.Method
	ev.RequestContext.HTTP.Path = r.URL.Path
	ev.RequestContext.HTTP.Protocol = r.Proto
	ev.RequestContext.HTTP.SourceIP = "127.0.0.1"
	if len(body) > 0 {
		if utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encoding the event: %w", err)
	}
	return payload, nil
}

// WriteResponse writes a function's API Gateway response payload as the
// HTTP response, as API Gateway would; a payload that is not one is
// answered 502, as API Gateway answers a malformed Lambda response.
func WriteResponse(w http.ResponseWriter, out []byte) {
	var resp v2Response
	if err := json.Unmarshal(out, &resp); err != nil {
		http.Error(w, "front: the function's response is not an API Gateway response", http.StatusBadGateway)
		return
	}
	respBody := []byte(resp.Body)
	if resp.IsBase64Encoded {
		var err error
		if respBody, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			http.Error(w, "front: bad base64 body", http.StatusBadGateway)
			return
		}
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	if resp.StatusCode == 0 {
		resp.StatusCode = http.StatusOK
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(respBody)
}
