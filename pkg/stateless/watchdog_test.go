package stateless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// watched is a server with one tool, "stubborn", that ignores its context
// until released, behind an idempotency guard, served over net/http; it
// records on which goroutine each handler and each ServeHTTP ran, and
// what Observe was told.
type watched struct {
	srv     *stateless.Server
	http    *httptest.Server
	client  *http.Client
	release chan struct{}
	fast    atomic.Bool
	runs    atomic.Int32
	late    atomic.Int32 // handlers that returned after being released

	mu       sync.Mutex
	served   []int64 // ServeHTTP's goroutines
	handled  []int64 // the handlers'
	outcomes []outcomeSeen
}

type outcomeSeen struct {
	Kind, Claim string
	Fault       bool
	Status      int
}

func newWatched(t *testing.T, maxDuration time.Duration) *watched {
	t.Helper()
	w := &watched{release: make(chan struct{})}
	guard := claims.New(claims.NewMemory(), &claims.Options{LeaseMargin: 3 * time.Second})
	w.srv = stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Interceptors: []stateless.Interceptor{guard.Interceptor()},
		Observe: func(_ context.Context, o *stateless.Outcome) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.outcomes = append(w.outcomes, outcomeSeen{Kind: o.Kind, Claim: o.Claim, Fault: o.Fault, Status: o.Status})
		}})
	w.srv.AddTool(&stateless.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`), MaxDuration: maxDuration},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			w.runs.Add(1)
			w.mu.Lock()
			w.handled = append(w.handled, goroutineID())
			w.mu.Unlock()
			if !w.fast.Load() {
				<-w.release
				defer w.late.Add(1)
			}
			req.Log(stateless.LevelInfo, "", "late") // touches its Call after the answer
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("done")}}, nil
		})
	w.http = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.served = append(w.served, goroutineID())
		w.mu.Unlock()
		w.srv.ServeHTTP(rw, r)
	}))
	w.client = w.http.Client()
	t.Cleanup(func() {
		select {
		case <-w.release:
		default:
			close(w.release)
		}
		w.http.Close()
	})
	return w
}

// call posts a keyed tools/call of stubborn and returns the response,
// its body and how long it took to read it whole.
func (w *watched) call(t *testing.T, key string) (*http.Response, []byte, time.Duration) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"stubborn","arguments":{},"idempotencyKey":"` + key +
		`","_meta":` + wire.MetaJSON(`{}`) + `}}`
	start := time.Now()
	resp, b := wire.Post(t, w.client, w.http.URL, wire.ModernHeaders("tools/call", "stubborn"), body)
	return resp, b, time.Since(start)
}

func (w *watched) seen() []outcomeSeen {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]outcomeSeen(nil), w.outcomes...)
}

// TestHandlerRunsOnTheRequestsGoroutineOverHTTP: over net/http (a stream
// that can end its answer early, stateless.Ender), a tool's handler that
// is not Inline runs on the request's own goroutine, with no hand-off;
// through Handle, which must return the answer, it runs apart.
func TestHandlerRunsOnTheRequestsGoroutineOverHTTP(t *testing.T) {
	w := newWatched(t, 5*time.Second)
	w.fast.Store(true)
	resp, body, _ := w.call(t, "k1")
	if r := wire.DecodeRPC(t, body); resp.StatusCode != 200 || r.Error != nil || r.Result["isError"] == true {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if resp.Close {
		t.Error("an answer given when the handler returned closes its connection")
	}
	w.mu.Lock()
	served, handled := w.served[0], w.handled[0]
	w.mu.Unlock()
	if served != handled {
		t.Errorf("over HTTP the handler ran on goroutine %d, the request on %d", handled, served)
	}

	req := &stateless.Request{Method: "POST", Header: wire.ModernHeaders("tools/call", "stubborn"), Host: "api.example.com",
		Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stubborn","_meta":` + wire.MetaJSON(`{}`) + `}}`)}
	here := goroutineID()
	if r := wire.DecodeRPC(t, w.srv.Handle(context.Background(), req).Body); r.Error != nil {
		t.Fatalf("Handle: %+v", r.Error)
	}
	w.mu.Lock()
	apart := w.handled[1]
	w.mu.Unlock()
	if apart == here {
		t.Errorf("through Handle the handler ran on the caller's goroutine %d", here)
	}
}

// TestStubbornHandlerOverHTTPIsAnsweredAtItsDeadline: a handler that
// ignores its context, run on the request's goroutine over net/http, is
// answered at its deadline (MaxDuration, and a fifth of the margin) with
// the in-band retryable Timeout, announced whole and with the
// connection's close, while it runs on; the request is reported once,
// then; its claim stays held, so a retry is refused "in progress" before
// and after the handler returns late, which reports nothing more.
func TestStubbornHandlerOverHTTPIsAnsweredAtItsDeadline(t *testing.T) {
	w := newWatched(t, 300*time.Millisecond)
	resp, body, took := w.call(t, "k1")
	if took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("answered after %v, want at the tool's 300ms deadline and a fifth of the 500ms margin", took)
	}
	if w.late.Load() != 0 || w.runs.Load() != 1 {
		t.Fatalf("%d runs, %d returned: the handler was to be still running", w.runs.Load(), w.late.Load())
	}
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(body)) || !resp.Close {
		t.Errorf("status %d, Content-Length %d of %d bytes, Connection: close %v; want 200, announced whole, closed",
			resp.StatusCode, resp.ContentLength, len(body), resp.Close)
	}
	r := wire.DecodeRPC(t, body)
	if r.Error == nil || !bytes.Contains(r.Error.Data, []byte(`"type":"timeout"`)) || !bytes.Contains(r.Error.Data, []byte(`"retryable":true`)) {
		t.Fatalf("answer %s", body)
	}
	if got := w.seen(); len(got) != 1 || got[0].Kind != "timeout" || !got[0].Fault || got[0].Status != 200 {
		t.Errorf("reported %+v, want one timeout, a fault", got)
	}

	// The handler still runs: the key is held, and the server answers.
	_, body, _ = w.call(t, "k1")
	if r := wire.DecodeRPC(t, body); r.Error == nil || !bytes.Contains(r.Error.Data, []byte(`"type":"idempotency_key_in_progress"`)) {
		t.Errorf("a retry while the handler runs: %s", body)
	}

	close(w.release)
	for end := time.Now().Add(5 * time.Second); w.late.Load() == 0; {
		if time.Now().After(end) {
			t.Fatal("the released handler did not return")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the request's goroutine goes back through the pipeline
	if got := w.seen(); len(got) != 2 {
		t.Errorf("reported %d requests, want 2: the late return reports nothing: %+v", len(got), got)
	}
	_, body, _ = w.call(t, "k1")
	if r := wire.DecodeRPC(t, body); r.Error == nil || !bytes.Contains(r.Error.Data, []byte(`"type":"idempotency_key_in_progress"`)) {
		t.Errorf("a retry after the late return, inside the lease: %s", body)
	}
	if n := w.runs.Load(); n != 1 {
		t.Errorf("the tool ran %d times, want 1", n)
	}
}

// endingStream is a stateless.Ender that records what it was sent and
// when it was ended.
type endingStream struct {
	mu     sync.Mutex
	status int
	header http.Header
	body   bytes.Buffer
	ended  chan struct{}
}

func (s *endingStream) Start(status int, h http.Header) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status, s.header = status, h
	return nil
}

func (s *endingStream) Write(p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body.Write(p)
	return nil
}

func (s *endingStream) End() error {
	close(s.ended)
	return nil
}

// TestEnderIsEndedAtTheDeadline: onto any stateless.Ender (a Lambda
// response stream's, say), a stubborn handler's call is answered and the
// stream ended at the deadline, while HandleStream has not returned; it
// returns once the handler does, writing nothing more.
func TestEnderIsEndedAtTheDeadline(t *testing.T) {
	w := newWatched(t, 200*time.Millisecond)
	st := &endingStream{ended: make(chan struct{})}
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		req := &stateless.Request{Method: "POST", Header: wire.ModernHeaders("tools/call", "stubborn"), Host: "api.example.com",
			Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stubborn","_meta":` + wire.MetaJSON(`{}`) + `}}`)}
		w.srv.HandleStream(context.Background(), req, st)
	}()
	select {
	case <-st.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the stream was not ended at the deadline")
	}
	st.mu.Lock()
	status, cl, conn, body := st.status, st.header.Get("Content-Length"), st.header.Get("Connection"), st.body.String()
	st.mu.Unlock()
	if status != 200 || cl == "" || conn != "close" || !strings.Contains(body, `"type":"timeout"`) {
		t.Errorf("status %d, Content-Length %q, Connection %q: %s", status, cl, conn, body)
	}
	select {
	case <-returned:
		t.Fatal("HandleStream returned while its handler ran")
	default:
	}
	close(w.release)
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("HandleStream did not return once its handler did")
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.body.String() != body {
		t.Errorf("written after the end: %q", st.body.String()[len(body):])
	}
}

// TestUnflushableWriterRunsHandlersApart: onto a writer that cannot send
// an answer before ServeHTTP returns, a tool's handler runs apart, as
// through Handle, so that ServeHTTP itself returns at the deadline with
// the in-band Timeout while the handler runs on.
func TestUnflushableWriterRunsHandlersApart(t *testing.T) {
	w := newWatched(t, 200*time.Millisecond)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"stubborn","arguments":{},"_meta":` + wire.MetaJSON(`{}`) + `}}`
	req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
	req.Header = wire.ModernHeaders("tools/call", "stubborn")
	rw := &wire.Buffered{}
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		w.srv.ServeHTTP(rw, req)
	}()
	// ServeHTTP returning while the handler still runs is the proof
	// that the handler ran on a goroutine of its own.
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("ServeHTTP did not return at the deadline")
	}
	if w.late.Load() != 0 {
		t.Fatal("the handler returned: nothing was shown")
	}
	if rw.Status != 200 || !strings.Contains(rw.Body.String(), `"type":"timeout"`) {
		t.Errorf("%d %s", rw.Status, rw.Body.String())
	}
}
