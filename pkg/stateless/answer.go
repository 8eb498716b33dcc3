package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// refuse answers with the JSON-RPC error for e.
func (x *exchange) refuse(id json.RawMessage, e *mcperr.Error) *Response {
	x.refusal = e
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
	h := http.Header{"Content-Type": contentTypeJSON}
	switch e.Kind() {
	case mcperr.KindMethodNotAllowed:
		h.Set("Allow", http.MethodPost)
	case mcperr.KindInsufficientScope, mcperr.KindUnauthorized:
		if c := e.Challenge(); c != "" {
			h.Set("WWW-Authenticate", c)
			h.Set(ChallengeRelayHeader, c)
		}
	}
	if d := e.RetryAfter(); d > 0 {
		h.Set("Retry-After", fmt.Sprint(int((d+time.Second-1)/time.Second)))
	}
	return &Response{Status: status, Header: h, Body: appendError(nil, id, e)}
}

// result answers with result v, decorated for the era.
func (x *exchange) result(v any, f *resultFields) *Response {
	f.modern = !x.legacy
	body, res, err := appendResult(x.s, nil, x.d.id, v, f)
	if err != nil {
		return x.refuse(x.d.id, mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("encoding result: %w", err)))
	}
	x.res = res
	return x.respond(body)
}

// respond sends a response message, as a server-sent event stream after
// the request's notifications when there are any and the client accepts
// a stream, else as JSON.
func (x *exchange) respond(msg []byte) *Response {
	notes := x.call.notes
	if len(notes) == 0 || !x.acceptsSSE {
		return &Response{Status: http.StatusOK, Header: http.Header{"Content-Type": contentTypeJSON}, Body: msg}
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
	case ctx.Err() == context.Canceled: // the caller went away
		return mcperr.Wrap(mcperr.KindCancelled, err)
	case errors.As(err, &me):
		return me
	case errors.As(err, &te):
		return mcperr.NewHandlerFailed(te.Text(), err)
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return mcperr.Wrap(mcperr.KindTimeout, err)
	}
	return mcperr.NewHandlerFailed(err.Error(), err)
}

// contentTypeJSON is the Content-Type of every JSON answer, shared: a
// header's value slice is never written in place (Header.Set replaces it,
// Add appends to a full slice, which copies it).
var contentTypeJSON = []string{"application/json"}
