package stateless_test

import (
	"bufio"
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

// ticker is a server with a tool that reports progress every 100 ms for
// 2 s, recording when it emitted each report.
type ticker struct {
	srv     *stateless.Server
	mu      sync.Mutex
	emitted []time.Time
	runs    atomic.Int32
	stopped chan error // the handler's end: nil, or its context's error
}

func newTicker(t *testing.T) *ticker {
	k := &ticker{stopped: make(chan error, 8)}
	g := claims.New(claims.NewMemory(), nil)
	k.srv = stateless.NewServer(stateless.Implementation{Name: "ticker", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Interceptors: []stateless.Interceptor{g.Interceptor()}})
	stateless.AddTool(k.srv, &stateless.Tool{Name: "ticks"}, func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, any, error) {
		k.runs.Add(1)
		for i := 1; i <= 20; i++ {
			select {
			case <-ctx.Done():
				k.stopped <- ctx.Err()
				return nil, nil, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			k.mu.Lock()
			k.emitted = append(k.emitted, time.Now())
			k.mu.Unlock()
			req.Progress(float64(i), 20, "")
		}
		k.stopped <- nil
		return text("done"), nil, nil
	})
	return k
}

// post sends a keyed tools/call of ticks with a progress token.
func post(ctx context.Context, t *testing.T, url, key string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ticks","arguments":{},"idempotencyKey":"` + key + `","_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header = wire.ModernHeaders("tools/call", "ticks")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestProgressStreamsLive: over net/http each progress notification is an
// event the client reads while the tool still runs, in order, and the
// result is the last event.
func TestProgressStreamsLive(t *testing.T) {
	k := newTicker(t)
	hs := httptest.NewServer(k.srv)
	defer hs.Close()
	start := time.Now()
	resp := post(context.Background(), t, hs.URL, "live-1")
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	var arrived []time.Time
	var progress []float64
	var last map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var msg map[string]any
		if err := json.Unmarshal([]byte(data), &msg); err != nil {
			t.Fatal(err)
		}
		if msg["method"] == "notifications/progress" {
			arrived = append(arrived, time.Now())
			progress = append(progress, msg["params"].(map[string]any)["progress"].(float64))
			continue
		}
		last = msg
	}
	if len(progress) != 20 || last == nil || last["result"] == nil {
		t.Fatalf("%d progress events, last %v", len(progress), last)
	}
	for i, p := range progress {
		if p != float64(i+1) {
			t.Fatalf("progress out of order: %v", progress)
		}
	}
	// Causal, not timed: the first report reached the client before the
	// tool had made its fifth, which a buffered answer cannot do.
	k.mu.Lock()
	fifth := k.emitted[4]
	k.mu.Unlock()
	if !arrived[0].Before(fifth) {
		t.Fatalf("the first event arrived %v after the call, after the fifth report was made (%v)", arrived[0].Sub(start), fifth.Sub(start))
	}
	t.Logf("first event %v after the call, result %v", arrived[0].Sub(start), time.Since(start))
}

// TestStreamClientGone: a client that goes away mid-stream cancels the
// tool's context; a retry with the same idempotency key runs it once more
// (the cancelled run did not complete), and a retry of that one replays.
func TestStreamClientGone(t *testing.T) {
	k := newTicker(t)
	hs := httptest.NewServer(k.srv)
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	resp := post(ctx, t, hs.URL, "gone-1")
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "event: message") {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel()
	resp.Body.Close()
	select {
	case err := <-k.stopped:
		if err == nil {
			t.Fatal("the tool ran to its end after its client left")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the tool's context was not cancelled")
	}
	var bodies [2][]byte
	for i := range bodies {
		deadline := time.Now().Add(5 * time.Second)
		for {
			r := post(context.Background(), t, hs.URL, "gone-1")
			var b bytes.Buffer
			b.ReadFrom(r.Body)
			r.Body.Close()
			if !strings.Contains(b.String(), "idempotency_key_in_progress") {
				bodies[i] = b.Bytes()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("retry %d: still in progress: %s", i, b.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	if k.runs.Load() != 2 || !bytes.Contains(bodies[0], []byte(`"done"`)) || !bytes.Contains(bodies[1], []byte(`"done"`)) {
		t.Fatalf("%d runs; retries answered %s and %s", k.runs.Load(), bodies[0], bodies[1])
	}
}

// recordingStream is a Stream that records what it is given, and when.
type recordingStream struct {
	mu     sync.Mutex
	status int
	header http.Header
	writes []string
	at     []time.Time
}

func (r *recordingStream) Start(status int, h http.Header) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.header = status, h
	return nil
}

func (r *recordingStream) Write(p []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writes, r.at = append(r.writes, string(p)), append(r.at, time.Now())
	return nil
}

// TestStreamKeepAlive: a streamed answer that has nothing to send for
// StreamKeepAlive sends an SSE comment, starting the event stream, so that
// a gateway that ends silent streams (a REST API's, after 5 minutes) does
// not cut it; the answer is its last event. A quick answer is JSON, as
// without the keep-alive; a client that does not accept an event stream
// gets none; a negative StreamKeepAlive sends none.
func TestStreamKeepAlive(t *testing.T) {
	newServer := func(keepAlive time.Duration) *stateless.Server {
		srv := stateless.NewServer(stateless.Implementation{Name: "quiet", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, StreamKeepAlive: keepAlive})
		stateless.AddTool(srv, &stateless.Tool{Name: "quiet", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *stateless.ToolRequest, in struct {
				Ms int `json:"ms"`
			}) (*stateless.CallToolResult, any, error) {
				time.Sleep(time.Duration(in.Ms) * time.Millisecond)
				return text("done"), nil, nil
			})
		return srv
	}
	call := func(srv *stateless.Server, ms string, accept string) *recordingStream {
		h := wire.ModernHeaders("tools/call", "quiet")
		if accept != "" {
			h.Set("Accept", accept)
		}
		st := &recordingStream{}
		srv.HandleStream(context.Background(), &stateless.Request{Method: "POST", Header: h,
			Body: []byte(req("1", "tools/call", withMeta(`"name":"quiet","arguments":{"ms":`+ms+`}`)))}, st)
		return st
	}
	srv := newServer(40 * time.Millisecond)
	st := call(srv, "250", "")
	var comments int
	for _, w := range st.writes[:len(st.writes)-1] {
		if w != ": keep-alive\n\n" {
			t.Fatalf("a write before the answer that is not a keep-alive: %q", w)
		}
		comments++
	}
	if st.status != 200 || st.header.Get("Content-Type") != "text/event-stream" || comments < 3 ||
		!strings.Contains(st.writes[len(st.writes)-1], "data: ") || !strings.Contains(st.writes[len(st.writes)-1], `"done"`) {
		t.Fatalf("status %d %q, %d keep-alives, writes %q", st.status, st.header.Get("Content-Type"), comments, st.writes)
	}
	// No comment comes later than the keep-alive after the one before:
	// the writes are at most a period apart, give or take the scheduler.
	for i := 1; i < len(st.at); i++ {
		if gap := st.at[i].Sub(st.at[i-1]); gap > 40*time.Millisecond*5 {
			t.Errorf("writes %d and %d are %v apart", i-1, i, gap)
		}
	}
	if st := call(srv, "0", ""); len(st.writes) != 1 || st.header.Get("Content-Type") != "application/json" {
		t.Errorf("a quick answer: %q %q", st.header.Get("Content-Type"), st.writes)
	}
	if st := call(srv, "150", "application/json"); len(st.writes) != 1 || st.header.Get("Content-Type") != "application/json" {
		t.Errorf("a client that takes JSON only: %q %q", st.header.Get("Content-Type"), st.writes)
	}
	if st := call(newServer(-1), "150", ""); len(st.writes) != 1 || st.header.Get("Content-Type") != "application/json" {
		t.Errorf("keep-alive off: %q %q", st.header.Get("Content-Type"), st.writes)
	}
}
