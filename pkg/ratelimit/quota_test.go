package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/ratelimit"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// countingCounter counts the writes a Limiter makes.
type countingCounter struct {
	ratelimit.Memory
	writes atomic.Int64
}

func (c *countingCounter) Increment(ctx context.Context, key string, expires time.Time) (int64, error) {
	c.writes.Add(1)
	return c.Memory.Increment(ctx, key, expires)
}

// TestRefusalsCostNoWrite: once this instance has seen a principal's
// window used up, its further calls in the window are refused without a
// write — one write for all of a flood's refusals — and the next window
// counts again. On today's code each refusal was an UpdateItem.
func TestRefusalsCostNoWrite(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	counter := &countingCounter{}
	srv := limitedServer(&ratelimit.Limiter{Counter: counter, Limit: 3, Window: time.Minute, Now: func() time.Time { return now }})
	c := mcptest.New(t, srv)
	c.Principal = "mallory"
	refused := 0
	for range 1000 {
		if a := c.CallTool("ping", nil); a.Error != nil {
			if !strings.Contains(string(a.Error.Data), `"rate_limited"`) || a.Header.Get("Retry-After") != "60" {
				t.Fatalf("refusal: %s %q", a.Raw, a.Header.Get("Retry-After"))
			}
			refused++
		}
	}
	if refused != 997 || counter.writes.Load() != 4 {
		t.Fatalf("%d refused with %d writes, want 997 with 4 (3 admitted, 1 that found the window used up)", refused, counter.writes.Load())
	}
	now = now.Add(time.Minute)
	if a := c.CallTool("ping", nil); a.Error != nil || counter.writes.Load() != 5 {
		t.Fatalf("the next window: %s, %d writes", a.Raw, counter.writes.Load())
	}
}

// TestBudgetsByKind: by default only the calls that run a handler are
// counted (tools/call, prompts/get, resources/read): a caller over its
// limit still discovers the server and lists its tools.
func TestBudgetsByKind(t *testing.T) {
	srv := limitedServer(&ratelimit.Limiter{Counter: &ratelimit.Memory{}, Limit: 1, Window: time.Hour})
	c := mcptest.New(t, srv)
	c.Principal = "mallory"
	c.CallTool("ping", nil)
	if a := c.CallTool("ping", nil); a.Error == nil {
		t.Fatal("the second call of a limit of 1 was served")
	}
	for range 50 {
		for _, m := range []string{"server/discover", "tools/list"} {
			if a := c.Call(m, nil); a.Error != nil {
				t.Fatalf("%s counted against the calls budget: %s", m, a.Raw)
			}
		}
	}
	if got := strings.Join(ratelimit.CallMethods, " "); got != "tools/call prompts/get resources/read" {
		t.Fatalf("CallMethods: %s", got)
	}
}

// TestAnonymousByVerifiedAddress: over real sockets, anonymous callers
// are charged by the address they connect from — never by the
// X-Forwarded-For they write — so a flood from one address, however it
// names itself, leaves another address's allowance whole. On today's
// code every anonymous caller shared one bucket.
func TestAnonymousByVerifiedAddress(t *testing.T) {
	srv := limitedServer(&ratelimit.Limiter{Counter: &ratelimit.Memory{}, Limit: 5, Window: time.Hour})
	ts := httptest.NewServer(&stateless.HTTPHandler{Server: srv})
	defer ts.Close()
	from := func(addr string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	call := func(c *http.Client, xff string) string {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ping","_meta":` + wire.MetaJSON(`{}`) + `}}`
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header = wire.ModernHeaders("tools/call", "ping")
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if strings.Contains(string(b), "rate_limited") {
			return "limited"
		}
		return "ok"
	}
	hostile, honest := from("127.0.0.2"), from("127.0.0.3")
	limitedN := 0
	for i := range 20 {
		if call(hostile, fmt.Sprintf("203.0.113.%d", i)) == "limited" {
			limitedN++
		}
	}
	if limitedN != 15 {
		t.Fatalf("%d of 20 calls from one address, each with its own X-Forwarded-For, limited; want 15", limitedN)
	}
	if got := call(honest, "127.0.0.2"); got != "ok" {
		t.Fatal("another address, claiming the first in X-Forwarded-For, was refused for its calls")
	}
}

// TestMemorySlots: a slot is named, so taking or giving it twice does it
// once; a caller holds at most max; a slot lapses by itself; callers are
// apart.
func TestMemorySlots(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	s := &ratelimit.MemorySlots{Now: func() time.Time { return now }}
	exerciseSlots(t, ctx, s, func(d time.Duration) { now = now.Add(d) }, func() time.Time { return now })
}

// exerciseSlots holds any Slots to the contract; advance moves its clock.
func exerciseSlots(t *testing.T, ctx context.Context, s ratelimit.Slots, advance func(time.Duration), now func() time.Time) {
	t.Helper()
	until := now().Add(time.Minute)
	for _, id := range []string{"a", "b", "a", "b"} {
		if err := s.Take(ctx, "mallory", id, until, 2); err != nil {
			t.Fatalf("take %s: %v", id, err)
		}
	}
	if err := s.Take(ctx, "mallory", "c", until, 2); !errors.Is(err, ratelimit.ErrFull) {
		t.Fatalf("a third of two: %v", err)
	}
	if err := s.Take(ctx, "alice", "c", until, 2); err != nil {
		t.Fatalf("another caller: %v", err)
	}
	for range 2 {
		if err := s.Give(ctx, "mallory", "a"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Give(ctx, "mallory", "never-taken"); err != nil {
		t.Fatal(err)
	}
	held, err := s.Held(ctx, "mallory")
	if err != nil || len(held) != 1 || !held["b"].Equal(until.Truncate(time.Millisecond)) {
		t.Fatalf("held after giving a twice: %v %v", held, err)
	}
	if err := s.Take(ctx, "mallory", "c", until, 2); err != nil {
		t.Fatalf("a slot given back: %v", err)
	}
	advance(2 * time.Minute)
	for _, id := range []string{"d", "e"} {
		if err := s.Take(ctx, "mallory", id, now().Add(time.Minute), 2); err != nil {
			t.Fatalf("after the slots lapsed: %v", err)
		}
	}
}

// TestStreamLimit: a principal holds at most Max streamed calls open at
// once; the next is refused rate_limited before its handler runs, another
// principal is served, and a slot comes back when its call is answered.
// A call answered whole holds none.
func TestStreamLimit(t *testing.T) {
	release := make(chan struct{})
	var running atomic.Int32
	s := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{Interceptors: []stateless.Interceptor{
		(&ratelimit.StreamLimit{Slots: &ratelimit.MemorySlots{}, Max: 2}).Interceptor()}})
	stateless.AddTool(s, &stateless.Tool{Name: "slow", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, _ struct{}) (*stateless.CallToolResult, any, error) {
			running.Add(1)
			<-release
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("done")}}, nil, nil
		})
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow","_meta":` + wire.MetaJSON(`{}`) + `}}`)
	streamed := func(principal string) string {
		st := &recordStream{}
		s.HandleStream(context.Background(), &stateless.Request{Method: http.MethodPost, Header: wire.ModernHeaders("tools/call", "slow"), Body: body, Host: "api.example.com", Principal: principal}, st)
		return st.String()
	}
	var wg sync.WaitGroup
	answers := make(chan string, 4)
	for range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); answers <- streamed("mallory") }()
	}
	for running.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	if a := streamed("mallory"); !strings.Contains(a, `"rate_limited"`) || running.Load() != 2 {
		t.Fatalf("a third open stream: %s (%d handlers ran)", a, running.Load())
	}
	wg.Add(1)
	go func() { defer wg.Done(); answers <- streamed("alice") }()
	for running.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	// Answered whole (the buffered doors): no slot.
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp := s.Handle(context.Background(), &stateless.Request{Method: http.MethodPost, Header: wire.ModernHeaders("tools/call", "slow"), Body: body, Host: "api.example.com", Principal: "mallory"})
		answers <- string(resp.Body)
	}()
	for running.Load() < 4 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(answers)
	for a := range answers {
		if !strings.Contains(a, "done") {
			t.Errorf("an admitted call: %s", a)
		}
	}
	if a := streamed("mallory"); !strings.Contains(a, "done") {
		t.Fatalf("after the streams ended: %s", a)
	}
}

// recordStream is a Stream that keeps what is written.
type recordStream struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (r *recordStream) Start(int, http.Header) error { return nil }
func (r *recordStream) Write(p []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf.Write(p)
	return nil
}
func (r *recordStream) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.String()
}
