// Package lambdahttp is the one minimal adapter that puts any
// http.Handler behind AWS Lambda for API Gateway HTTP API events (payload
// format 2.0): decode the event, build an *http.Request, serve it into an
// httptest.ResponseRecorder, and encode the recorded answer as the 2.0
// response payload.
//
// The peers ship no Lambda adapter of their own, so the benchmarks and the
// cold-start binaries put them — and, for comparison, our server's
// net/http face — behind this one, so that the adapter costs the same for
// all of them. It deliberately imports nothing of this project (not even
// pkg/apigw), so that a peer's binary links no code of ours.
package lambdahttp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"unicode/utf8"
)

// event is the part of an HTTP API 2.0 event that a handler can see.
type event struct {
	Version         string            `json:"version"`
	RawPath         string            `json:"rawPath"`
	RawQueryString  string            `json:"rawQueryString"`
	Cookies         []string          `json:"cookies"`
	Headers         map[string]string `json:"headers"`
	Body            string            `json:"body"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
	RequestContext  struct {
		DomainName string `json:"domainName"`
		HTTP       struct {
			Method   string `json:"method"`
			Path     string `json:"path"`
			SourceIP string `json:"sourceIp"`
		} `json:"http"`
	} `json:"requestContext"`
}

// Response is the HTTP API 2.0 response payload.
type Response struct {
	StatusCode      int               `json:"statusCode"`
	Headers         map[string]string `json:"headers,omitempty"`
	Cookies         []string          `json:"cookies,omitempty"`
	Body            string            `json:"body"`
	IsBase64Encoded bool              `json:"isBase64Encoded"`
}

// ErrNotV2 is returned for a payload that is not an HTTP API 2.0 event.
var ErrNotV2 = errors.New("lambdahttp: payload is not an HTTP API 2.0 event")

// Adapter serves Handler to Lambda. It implements lambda.Handler.
type Adapter struct {
	Handler http.Handler
}

// New returns an adapter for h.
func New(h http.Handler) *Adapter { return &Adapter{Handler: h} }

// Invoke implements lambda.Handler: one event in, one response payload
// out. The request carries ctx, and so the invocation's deadline.
func (a *Adapter) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var ev event
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotV2, err)
	}
	if ev.Version != "2.0" || ev.RequestContext.HTTP.Method == "" {
		return nil, ErrNotV2
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return nil, fmt.Errorf("lambdahttp: body marked base64 does not decode: %w", err)
		}
	}
	// API Gateway lower-cases header names; handlers look them up in
	// canonical form.
	h := make(http.Header, len(ev.Headers)+1)
	for k, v := range ev.Headers {
		h[http.CanonicalHeaderKey(k)] = []string{v}
	}
	if len(ev.Cookies) > 0 {
		h["Cookie"] = []string{strings.Join(ev.Cookies, "; ")}
	}
	path := ev.RawPath
	if path == "" {
		path = ev.RequestContext.HTTP.Path
	}
	u := &url.URL{Path: path, RawQuery: ev.RawQueryString}
	host := h.Get("Host")
	if host == "" {
		host = ev.RequestContext.DomainName
	}
	r := (&http.Request{
		Method:        ev.RequestContext.HTTP.Method,
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Host:          host,
		RemoteAddr:    ev.RequestContext.HTTP.SourceIP + ":0",
		RequestURI:    u.RequestURI(),
	}).WithContext(ctx)

	w := httptest.NewRecorder()
	a.Handler.ServeHTTP(w, r)

	out := Response{StatusCode: w.Code}
	if hdr := w.Header(); len(hdr) > 0 {
		out.Headers = make(map[string]string, len(hdr))
		for k, vs := range hdr {
			if k == "Set-Cookie" {
				out.Cookies = vs
				continue
			}
			out.Headers[k] = strings.Join(vs, ",")
		}
	}
	if b := w.Body.Bytes(); utf8.Valid(b) {
		out.Body = string(b)
	} else {
		out.Body, out.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return json.Marshal(out)
}
