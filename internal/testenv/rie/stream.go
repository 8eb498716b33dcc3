package rie

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// InvokeStream sends one invocation payload and returns the function's
// response body as the emulator passes it on, not waiting for its end.
// The emulator is held until the body is closed.
func (e *Emulator) InvokeStream(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	e.mu.Lock()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(payload))
	if err != nil {
		e.mu.Unlock()
		return nil, err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		e.mu.Unlock()
		return nil, fmt.Errorf("rie: invoke: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.mu.Unlock()
		return nil, fmt.Errorf("rie: invoke answered %d: %s", resp.StatusCode, body)
	}
	return &heldBody{ReadCloser: resp.Body, release: e.mu.Unlock}, nil
}

type heldBody struct {
	io.ReadCloser
	release func()
	once    bool
}

func (h *heldBody) Close() error {
	err := h.ReadCloser.Close()
	if !h.once {
		h.once = true
		h.release()
	}
	return err
}

// StreamFront is a loopback front for a function invoked as a response
// stream, as the REST door (an integration whose response transfer mode
// is STREAM) or a function URL in RESPONSE_STREAM mode invokes it: each
// HTTP request becomes the door's event; the function's answer, in the
// HTTP integration response format (a JSON prelude with the status and
// headers, eight NUL bytes, the body), is passed on as it comes, each
// piece flushed, its headers renamed as the door renames them. An answer
// without the prelude (a buffered one) is answered as Front answers it.
// It is a test tool.
type StreamFront struct {
	Function Streamer
	// Door is the door: FunctionURL or RESTAPI stream; HTTPAPI (the zero
	// value) answers each request as the buffered door does
	// (MCP_REQUEST_TIMEOUT's bound included, when the function has it):
	// the event is an HTTP API's and the answer is read whole.
	Door Door
	// REST is what the template deploys on a RESTAPI door beyond the
	// integration: a custom domain, the metadata's mock integrations,
	// the authorizer.
	REST REST
	// Idle, if set, replaces the door's IdleTimeout.
	Idle time.Duration
}

// invokeWhole invokes the function and reads its whole answer: an
// authorizer's.
func (f *StreamFront) invokeWhole(ctx context.Context, payload []byte) ([]byte, error) {
	out, err := f.Function.InvokeStream(ctx, payload)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	return io.ReadAll(out)
}

// Streamer invokes a function and returns its response as it is written:
// an Emulator (which buffers it whole) or a runtimeapi.Runtime (which
// does not).
type Streamer interface {
	InvokeStream(ctx context.Context, payload []byte) (io.ReadCloser, error)
}

// StreamDomain is the domain name of a FunctionURL door's events: a
// function URL's.
const StreamDomain = "stream.lambda-url.us-east-1.on.aws"

// ServeHTTP implements http.Handler.
func (f *StreamFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r, f.Door)
	if !ok {
		return
	}
	payload, ok := f.Door.event(r.Context(), w, r, body, EventOptions{}, f.REST, f.invokeWhole)
	if !ok {
		return
	}
	// The invocation runs to its end even if the client goes away (the
	// emulator serves one at a time); its output is then discarded.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), functionMaxTimeout)
	defer cancel()
	out, err := f.Function.InvokeStream(ctx, payload)
	if err != nil {
		http.Error(w, "front: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer out.Close()
	idle := f.Idle
	if idle == 0 {
		idle = f.Door.IdleTimeout()
	}
	f.Door.writeStream(w, out, idle)
}

// WriteStreamResponse writes a function's response stream as the HTTP
// response, as a function URL in RESPONSE_STREAM mode would (see
// StreamFront).
func WriteStreamResponse(w http.ResponseWriter, out io.Reader) {
	FunctionURL.writeStream(w, out, FunctionURL.IdleTimeout())
}

// writeStream writes a response stream as the door would: the status and
// headers of its JSON prelude, renamed as the door renames them, then the
// body after the eight NUL bytes, each piece flushed as it comes. An
// answer without the prelude (a buffered one) is written as the door
// writes a buffered answer.
func (d Door) writeStream(w http.ResponseWriter, out io.Reader, idle time.Duration) {
	br := bufio.NewReader(out)
	head, err := readPrelude(br)
	if err != nil {
		rest, _ := io.ReadAll(br)
		d.writeResponse(w, append(head, rest...), nil)
		return
	}
	var prelude struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		// Cookies are the response's Set-Cookie values ("Configuring a
		// Lambda function to stream responses": the prelude's cookies).
		Cookies []string `json:"cookies"`
	}
	if err := json.Unmarshal(head, &prelude); err != nil || prelude.StatusCode == 0 {
		d.badResponse(w)
		return
	}
	fn := http.Header{}
	for k, v := range prelude.Headers {
		fn.Set(k, v)
	}
	d.remap(fn)
	for k, vs := range fn {
		w.Header()[k] = vs
	}
	for _, c := range prelude.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	w.WriteHeader(prelude.StatusCode)
	rc := http.NewResponseController(w)
	rc.Flush()
	type piece struct {
		b   []byte
		err error
	}
	pieces, done := make(chan piece), make(chan struct{})
	defer close(done)
	go func() {
		for {
			buf := make([]byte, 32<<10)
			n, err := br.Read(buf)
			select {
			case pieces <- piece{buf[:n], err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var idleC <-chan time.Time // nil: no idle timeout
	var timer *time.Timer
	if idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		idleC = timer.C
	}
	for {
		select {
		case p := <-pieces:
			if !d.passOn(w, rc, p.b, p.err) {
				return
			}
			if timer != nil {
				timer.Reset(idle)
			}
		case <-idleC:
			// API Gateway ends a stream idle this long: the client sees
			// the connection cut, not an answer.
			panic(http.ErrAbortHandler)
		}
	}
}

// passOn writes one piece of a stream and flushes it; false ends the
// stream (its end, a failure, or a client gone; the invocation runs on).
func (d Door) passOn(w http.ResponseWriter, rc *http.ResponseController, b []byte, err error) bool {
	if len(b) > 0 {
		if _, werr := w.Write(b); werr != nil {
			return false
		}
		rc.Flush()
	}
	return err == nil
}

// IdleTimeout is how long the door lets a response stream go without a
// byte before it ends it: 5 minutes for a REST API's regional endpoint
// (API Gateway developer guide, "Stream the integration response for your
// proxy integrations"); none documented for a function URL.
func (d Door) IdleTimeout() time.Duration {
	if d == RESTAPI {
		return restStreamIdle
	}
	return 0
}

const restStreamIdle = 5 * time.Minute

// readPrelude reads up to the eight NUL bytes that end a prelude; it
// returns what it read and an error when the answer has none (a buffered
// answer, JSON, has no NUL byte).
func readPrelude(br *bufio.Reader) ([]byte, error) {
	var head []byte
	for {
		b, err := br.ReadByte()
		if err != nil {
			return head, err
		}
		if b == 0 {
			for i := 1; i < 8; i++ {
				if c, err := br.ReadByte(); err != nil || c != 0 {
					return head, fmt.Errorf("front: a prelude's end is eight NUL bytes")
				}
			}
			return head, nil
		}
		head = append(head, b)
		if len(head) == 1 && b != '{' {
			return head, fmt.Errorf("front: no prelude")
		}
		if len(head) > 64<<10 {
			return head, fmt.Errorf("front: no prelude within 64 KiB")
		}
	}
}
