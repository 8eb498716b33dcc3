package stateless

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Stream receives an answer as it is made: its status and headers once,
// then its body, each write sent on at once (flushed). A transport that
// can stream — net/http, a Lambda response stream — implements it, and
// [Server.HandleStream] writes to it.
type Stream interface {
	// Start sends the status and the headers. It is called once, before
	// any Write.
	Start(status int, header http.Header) error
	// Write sends p and flushes it. An error means the client is gone.
	Write(p []byte) error
}

// Ender is a [Stream] whose transport can complete an answer before
// [Server.HandleStream] returns: net/http's (the answer announced whole,
// flushed, and the connection closed once the handler returns), a Lambda
// response stream's (the stream closed, the invocation over). Onto such
// a stream the server runs a tool's handler on the request's goroutine
// and, should the handler still be running at its deadline, answers the
// call from a timer and ends the stream, leaving the handler to return
// when it will: the in-band answer a handler run apart gets, without the
// hand-off to another goroutine that every call would pay for it.
type Ender interface {
	Stream
	// End completes the answer written so far: nothing more is written
	// to the stream, though HandleStream has not returned.
	End() error
}

// HandleStream answers r as Handle does, onto st, with one difference: a
// request whose client accepts an event stream gets its progress and log
// notifications as server-sent events the moment the handler emits them,
// then its answer as the last event. A request that emits none is
// answered as Handle answers it, as JSON. After a write fails (the client
// went away) nothing more is written; the transport ends the request's
// context when it knows the client is gone (net/http does), and a tool's
// handler sees that and its idempotency claim is settled as for any
// failure, so a retry with the same key neither runs beside it nor runs
// twice.
func (s *Server) HandleStream(ctx context.Context, r *Request, st Stream) {
	s.handleRequest(ctx, r, st, nil)
}

// liveStream sends one request's notifications as they happen. It is
// shared by the request and its tool's handler (which may outlive the
// answer, abandoned): every use takes the lock, and after the answer
// nothing more is written.
type liveStream struct {
	mu      sync.Mutex
	st      Stream
	ends    bool // st is an Ender
	started bool
	done    bool
	failed  bool
	wrote   time.Time   // the last write, for keepAlive
	timer   *time.Timer // keepAlive's, stopped by finish
}

// keepAliveComment is what keepAlive writes: an SSE comment, which
// clients skip.
var keepAliveComment = []byte(": keep-alive\n\n")

// keepAlive writes keepAliveComment whenever the stream has gone a
// period of every without a write, starting the event stream if need be,
// until the answer is written. It costs a request one timer, and no
// goroutine until the timer fires.
func (l *liveStream) keepAlive(every time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.wrote = time.Now()
	l.timer = time.AfterFunc(every, func() { l.tick(every) })
}

// tick is the keep-alive timer's: a comment if the stream has been quiet
// for every, and the timer set again for the next lull.
func (l *liveStream) tick(every time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done || l.failed {
		return
	}
	next := every - time.Since(l.wrote)
	if next <= 0 {
		if l.startLocked() {
			l.writeLocked(keepAliveComment)
		}
		next = every
	}
	l.timer.Reset(next)
}

// startLocked starts the event stream if it has not started, and reports
// whether it can be written to.
func (l *liveStream) startLocked() bool {
	if !l.started {
		l.started = true
		if err := l.st.Start(http.StatusOK, eventStreamHeader()); err != nil {
			l.fail()
		}
	}
	return !l.failed
}

// writeLocked writes p, recording when.
func (l *liveStream) writeLocked(p []byte) {
	if err := l.st.Write(p); err != nil {
		l.fail()
	}
	l.wrote = time.Now()
}

// eventStreamHeader are the headers of a streamed answer.
func eventStreamHeader() http.Header {
	return http.Header{"Content-Type": {"text/event-stream"}, "Cache-Control": {"no-cache"}, "X-Accel-Buffering": {"no"}}
}

// event sends one notification now, starting the event stream with the
// first. It reports false when the stream cannot take it (the answer was
// written), and the caller keeps it as it would without a stream.
func (l *liveStream) event(msg []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return true // the answer has gone; a late notification has no place
	}
	if l.failed {
		return true
	}
	if l.startLocked() {
		l.writeLocked(appendEvent(nil, msg))
	}
	return true
}

// broken reports whether a write failed: the client is gone.
func (l *liveStream) broken() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// fail records that the stream is broken: nothing more is written.
func (l *liveStream) fail() { l.failed = true }

// finish writes the answer: the last event of a stream that started, or
// the whole response of one that did not.
func (l *liveStream) finish(resp *Response) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.finishLocked(resp, false)
}

// finishEarly writes the answer onto an Ender and ends it, while the
// request's goroutine is still held by its handler (answerEarly): a
// whole response is announced (Content-Length) and asks for the
// connection to be closed, since the transport cannot read the next
// request on it until the handler returns.
func (l *liveStream) finishEarly(resp *Response) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.finishLocked(resp, true)
	if !l.failed {
		_ = l.st.(Ender).End()
	}
}

func (l *liveStream) finishLocked(resp *Response, early bool) {
	l.done = true
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.failed {
		return
	}
	if !l.started {
		h := resp.Header
		if early || len(resp.Body) > 2048 {
			// Announced, not chunked (net/http computes it itself for
			// a shorter body it buffers whole, when the handler returns).
			if h = h.Clone(); h == nil {
				h = http.Header{}
			}
			h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
			if early {
				h.Set("Connection", "close")
			}
		}
		if l.st.Start(resp.Status, h) == nil {
			_ = l.st.Write(resp.Body)
		}
		return
	}
	_ = l.st.Write(appendEvent(nil, resp.Body))
}
