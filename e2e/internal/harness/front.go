package harness

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
)

// A front stands where API Gateway (or a function URL) and Lambda stand:
// it turns each HTTP request into one invocation of an instance that
// serves one at a time, and the invocation's output into the answer. The
// functions here are the steps every front takes the same way; which
// instance serves, and what is counted, is each front's own.

// maxBody is the largest request body a front passes on.
const maxBody = 10 << 20

// ReadBody reads a request's body for a front. Past maxBody, or when it
// cannot be read, it answers 413 itself and ok is false.
func ReadBody(w http.ResponseWriter, r *http.Request) (body []byte, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "front: reading the body: "+err.Error(), http.StatusRequestEntityTooLarge)
		return nil, false
	}
	return body, true
}

// Event is the event of request r, with body, at the door it asks for:
// an API Gateway HTTP API event (answered buffered), or, when stream, a
// function URL's event in RESPONSE_STREAM mode; id is its
// requestContext.requestId, principal a Lambda authorizer's principal id
// ("" for none). The front's own headers must be gone from r by then.
func Event(r *http.Request, body []byte, id, principal string, stream bool) ([]byte, error) {
	o := rie.EventOptions{RequestID: id, Principal: principal}
	if stream {
		o.DomainName = rie.StreamDomain
	}
	return rie.NewEvent(r, body, o)
}

// Invoke runs one invocation of payload for request r. It runs to its
// end even if the caller goes away, as on Lambda, for a minute at most.
func Invoke(r *http.Request, invoke func(ctx context.Context, payload []byte) ([]byte, error), payload []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 60*time.Second)
	defer cancel()
	return invoke(ctx, payload)
}

// Respond writes an invocation's output as the door answers it: a
// response stream (the emulator passes it on whole: the prelude, then
// the body) when stream, else the HTTP integration's buffered response.
func Respond(w http.ResponseWriter, out []byte, stream bool) {
	if stream {
		rie.WriteStreamResponse(w, bytes.NewReader(out))
		return
	}
	rie.WriteResponse(w, out)
}

// WakeOnDone broadcasts on c once ctx is done, so that a caller waiting
// on c for an idle instance sees its context end rather than wait for an
// instance it no longer wants. Call stop when the wait is over.
func WakeOnDone(ctx context.Context, c *sync.Cond) (stop func() bool) {
	return context.AfterFunc(ctx, func() {
		c.L.Lock()
		c.Broadcast()
		c.L.Unlock()
	})
}
