package stateless_test

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// stubborn is a tool that ignores its context: it returns when told to
// (release), or at once when fast is set.
type stubborn struct {
	srv     *stateless.Server
	runs    atomic.Int32
	fast    atomic.Bool
	release chan struct{}
}

func newStubborn(t *testing.T, guard *claims.Guard, tool *stateless.Tool) *stubborn {
	t.Helper()
	s := &stubborn{release: make(chan struct{})}
	s.srv = stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Interceptors: []stateless.Interceptor{guard.Interceptor()}})
	s.srv.AddTool(tool, func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		s.runs.Add(1)
		if !s.fast.Load() {
			<-s.release
		}
		req.Log(stateless.LevelInfo, "", "late") // touches its Call after the answer
		return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("done")}}, nil
	})
	return s
}

func (s *stubborn) call(ctx context.Context, name, key string) *stateless.Response {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{},"idempotencyKey":"` + key +
		`","_meta":` + wire.MetaJSON(`{}`) + `}}`
	return s.srv.Handle(ctx, &stateless.Request{Method: "POST", Header: wire.ModernHeaders("tools/call", name), Body: []byte(body), Host: "api.example.com"})
}

// refusal decodes a response's error data: its type and retry hint.
func refusal(t *testing.T, resp *stateless.Response) (typ string, retryAfterMs int64) {
	t.Helper()
	r := wire.DecodeRPC(t, resp.Body)
	if r.Error == nil {
		t.Fatalf("not a refusal: %s", resp.Body)
	}
	var d struct {
		Type         string `json:"type"`
		Retryable    bool   `json:"retryable"`
		RetryAfterMs int64  `json:"retryAfterMs"`
	}
	_ = json.Unmarshal(r.Error.Data, &d)
	if !d.Retryable {
		t.Errorf("refusal %s is not retryable", resp.Body)
	}
	return d.Type, d.RetryAfterMs
}

// settleGoroutines waits until no more goroutines run than before, and
// fails the test if they do not: a handler must not leak past its return.
func settleGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestToolIgnoringCancellationIsAnsweredBeforeTheDeadline: a tool that
// ignores its context under a 1 s deadline is answered with a retryable
// Timeout before the deadline, in-band; when it returns late its claim is
// neither completed nor released, so a retry inside the lease is refused
// "in progress", and one after the lease runs the tool once.
func TestToolIgnoringCancellationIsAnsweredBeforeTheDeadline(t *testing.T) {
	before := runtime.NumGoroutine()
	// A lease margin long enough that the retries below land inside the
	// lease however slow the machine is.
	guard := claims.New(claims.NewMemory(), &claims.Options{LeaseMargin: 3 * time.Second})
	s := newStubborn(t, guard, &stateless.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`), MaxDuration: 5 * time.Second})

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	resp := s.call(ctx, "stubborn", "k1")
	cancel()
	elapsed := time.Since(start)
	if elapsed >= time.Second || elapsed < 400*time.Millisecond {
		t.Errorf("answered after %v, want before the 1s deadline less the 500ms margin", elapsed)
	}
	if resp.Status != 200 {
		t.Errorf("status %d, want 200 (in-band)", resp.Status)
	}
	if typ, _ := refusal(t, resp); typ != "timeout" {
		t.Fatalf("refusal type %q: %s", typ, resp.Body)
	}
	// The lease: the handler's 500ms plus the guard's 3s margin.
	leaseEnd := start.Add(3500 * time.Millisecond)

	retry := func() *stateless.Response {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return s.call(ctx, "stubborn", "k1")
	}
	r := retry()
	typ, after := refusal(t, r)
	if typ != "idempotency_key_in_progress" || after <= 0 || after > 3500 {
		t.Errorf("a retry while the tool runs: %s, retryAfterMs %d: %s", typ, after, r.Body)
	}
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 1 || ra > 4 {
		t.Errorf("Retry-After %q", r.Header.Get("Retry-After"))
	}

	// The late finish changes nothing.
	close(s.release)
	settleGoroutines(t, before)
	if time.Now().After(leaseEnd.Add(-200 * time.Millisecond)) {
		t.Fatalf("the machine took %v to get here: no retry inside the lease is possible", time.Since(start))
	}
	if typ, _ := refusal(t, retry()); typ != "idempotency_key_in_progress" {
		t.Errorf("a retry after the late finish, inside the lease: %s", typ)
	}
	if n := s.runs.Load(); n != 1 {
		t.Errorf("ran %d times inside the lease", n)
	}

	time.Sleep(time.Until(leaseEnd) + 50*time.Millisecond)
	s.fast.Store(true)
	if r := wire.DecodeRPC(t, retry().Body); r.Error != nil || r.Result["isError"] == true {
		t.Fatalf("the retry after the lease: %+v", r)
	}
	if n := s.runs.Load(); n != 2 {
		t.Errorf("ran %d times, want 2", n)
	}
	r2 := wire.DecodeRPC(t, retry().Body)
	if meta, _ := r2.Result["_meta"].(map[string]any); meta == nil || meta[stateless.MetaReplay] != true {
		t.Errorf("the next retry is not a replay: %+v", r2)
	}
	if n := s.runs.Load(); n != 2 {
		t.Errorf("ran %d times, want 2", n)
	}
	settleGoroutines(t, before)
}

// TestLocalInProgressHintIsSeconds: a keyed call with no deadline of its
// own (net/http, locally) holds its claim for the tool's lease, so a
// duplicate is told to retry in seconds, not in 15 minutes.
func TestLocalInProgressHintIsSeconds(t *testing.T) {
	before := runtime.NumGoroutine()
	s := newStubborn(t, claims.New(claims.NewMemory(), nil), &stateless.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`)})
	first := make(chan *stateless.Response)
	go func() { first <- s.call(context.Background(), "stubborn", "k1") }()
	for s.runs.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	r := s.call(context.Background(), "stubborn", "k1")
	typ, after := refusal(t, r)
	if typ != "idempotency_key_in_progress" {
		t.Fatalf("duplicate: %s", r.Body)
	}
	// The default MaxDuration (10s) plus the guard's default margin (5s).
	if after > 15_000 || after < 14_000 {
		t.Errorf("retryAfterMs %d, want about 15000", after)
	}
	if ra, _ := strconv.Atoi(r.Header.Get("Retry-After")); ra < 14 || ra > 15 {
		t.Errorf("Retry-After %q, want 15", r.Header.Get("Retry-After"))
	}
	close(s.release)
	if r := wire.DecodeRPC(t, (<-first).Body); r.Error != nil {
		t.Errorf("the first call: %+v", r.Error)
	}
	settleGoroutines(t, before)
}

// TestAbandonedClaimBlocksItsKeyForTheToolsLease: a call whose handler
// never finished (as if its instance crashed) blocks its key for the
// tool's MaxDuration and the lease margin, not 15 minutes.
func TestAbandonedClaimBlocksItsKeyForTheToolsLease(t *testing.T) {
	before := runtime.NumGoroutine()
	guard := claims.New(claims.NewMemory(), &claims.Options{LeaseMargin: 200 * time.Millisecond})
	s := newStubborn(t, guard, &stateless.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`), MaxDuration: 300 * time.Millisecond})
	start := time.Now()
	if typ, _ := refusal(t, s.call(context.Background(), "stubborn", "k1")); typ != "timeout" {
		t.Fatalf("the first call: %s", typ)
	}
	if e := time.Since(start); e > 450*time.Millisecond {
		t.Errorf("answered after %v, want at MaxDuration (300ms)", e)
	}
	close(s.release) // its result is discarded: as good as a crash
	if typ, _ := refusal(t, s.call(context.Background(), "stubborn", "k1")); typ != "idempotency_key_in_progress" {
		t.Errorf("a retry inside the lease: %s", typ)
	}
	time.Sleep(time.Until(start.Add(550 * time.Millisecond)))
	s.fast.Store(true)
	if r := wire.DecodeRPC(t, s.call(context.Background(), "stubborn", "k1").Body); r.Error != nil {
		t.Errorf("a retry after the lease: %+v", r.Error)
	}
	if n := s.runs.Load(); n != 2 {
		t.Errorf("ran %d times, want 2", n)
	}
	settleGoroutines(t, before)
}

// TestOverdueHandlersAreBounded: handlers left running past their
// deadline are counted; at Options.MaxOverdue further calls are refused
// without running, until one returns.
func TestOverdueHandlersAreBounded(t *testing.T) {
	before := runtime.NumGoroutine()
	s := &stubborn{release: make(chan struct{})}
	s.srv = stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, MaxOverdue: 2})
	s.srv.AddTool(&stateless.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`), MaxDuration: 20 * time.Millisecond},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			s.runs.Add(1)
			if !s.fast.Load() {
				<-s.release
			}
			return nil, nil
		})
	for i := range 3 {
		if typ, _ := refusal(t, s.call(context.Background(), "stubborn", "k"+strconv.Itoa(i))); typ != "timeout" {
			t.Fatalf("call %d: %s", i, typ)
		}
	}
	if n := s.runs.Load(); n != 2 {
		t.Errorf("%d handlers ran, want 2 (the third refused)", n)
	}
	close(s.release)
	settleGoroutines(t, before)
	s.fast.Store(true)
	if r := wire.DecodeRPC(t, s.call(context.Background(), "stubborn", "k9").Body); r.Error != nil {
		t.Errorf("once the overdue handlers returned: %+v", r.Error)
	}
}

// TestAbandonedCallKeepsItsSingleUseState: a call redeeming a single-use
// state whose handler is abandoned at its deadline keeps the state held:
// an unkeyed retry with the same state is refused while the first
// handler may still be acting on it, and the tool's effect happens once.
func TestAbandonedCallKeepsItsSingleUseState(t *testing.T) {
	before := runtime.NumGoroutine()
	guard := claims.New(claims.NewMemory(), &claims.Options{LeaseMargin: 5 * time.Second})
	release := make(chan struct{})
	var effects atomic.Int32
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Interceptors: []stateless.Interceptor{guard.Interceptor()}})
	srv.AddTool(&stateless.Tool{Name: "confirm", InputSchema: json.RawMessage(`{"type":"object"}`), MaxDuration: 300 * time.Millisecond},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			if _, asked := req.State(); !asked {
				return nil, &stateless.InputRequired{State: []byte("asked"), SingleUse: true}
			}
			<-release // ignores its context
			effects.Add(1)
			return &stateless.CallToolResult{}, nil
		})
	call := func(extra string) *stateless.Response {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"confirm","arguments":{}` + extra + `,"_meta":` + wire.MetaJSON(`{}`) + `}}`
		return srv.Handle(context.Background(), &stateless.Request{Method: "POST", Header: wire.ModernHeaders("tools/call", "confirm"), Body: []byte(body), Host: "api.example.com"})
	}
	first := wire.DecodeRPC(t, call("").Body)
	state, _ := first.Result["requestState"].(string)
	if state == "" {
		t.Fatalf("no requestState: %+v", first)
	}
	withState := `,"requestState":"` + state + `"`
	if typ, _ := refusal(t, call(withState)); typ != "timeout" {
		t.Fatalf("the confirmed call: %s", typ)
	}
	// The first handler is still running: the same state must not start
	// a second one. It is not spent either: the refusal is retryable.
	resp := call(withState)
	if typ, after := refusal(t, resp); typ != "request_state_in_use" || after <= 0 {
		t.Errorf("a retry with the held state: %s", resp.Body)
	}
	close(release)
	// The released handler finishes its effect; the goroutine count alone
	// cannot say when (another test's goroutines may end meanwhile).
	for end := time.Now().Add(5 * time.Second); effects.Load() == 0 && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	settleGoroutines(t, before)
	if n := effects.Load(); n != 1 {
		t.Errorf("the effect happened %d times, want 1", n)
	}
}

// TestInlineToolIsAnsweredWhenItReturns: an Inline tool runs on the
// request's goroutine, with the same context and answer as one that runs
// apart; one that ignores its deadline is answered when it returns, with
// its result, and the overrun is a fault in the request's outcome; a panic
// is recovered as from any handler.
func TestInlineToolIsAnsweredWhenItReturns(t *testing.T) {
	var outcomes []*stateless.Outcome
	var calledOn, handledOn atomic.Int64
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Observe: func(_ context.Context, o *stateless.Outcome) { outcomes = append(outcomes, o) },
	})
	release := make(chan struct{})
	for _, inline := range []bool{true, false} {
		name := "apart"
		if inline {
			name = "inline"
		}
		srv.AddTool(&stateless.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), Inline: inline},
			func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
				handledOn.Store(goroutineID())
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("done")}}, nil
			})
	}
	srv.AddTool(&stateless.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`), Inline: true},
		func(context.Context, *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			<-release // ignores its context
			return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text("late")}}, nil
		})
	srv.AddTool(&stateless.Tool{Name: "panics", InputSchema: json.RawMessage(`{"type":"object"}`), Inline: true},
		func(context.Context, *stateless.ToolRequest) (*stateless.CallToolResult, error) { panic("inline") })
	call := func(ctx context.Context, name string) *stateless.Response {
		calledOn.Store(goroutineID())
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":{},"_meta":` + wire.MetaJSON(`{}`) + `}}`
		return srv.Handle(ctx, &stateless.Request{Method: "POST", Header: wire.ModernHeaders("tools/call", name), Body: []byte(body), Host: "api.example.com"})
	}

	inline, apart := call(context.Background(), "inline"), call(context.Background(), "apart")
	if string(inline.Body) != string(apart.Body) || inline.Status != 200 {
		t.Errorf("inline %d %s\napart %d %s", inline.Status, inline.Body, apart.Status, apart.Body)
	}
	call(context.Background(), "inline")
	if handledOn.Load() != calledOn.Load() {
		t.Errorf("the inline handler ran on goroutine %d, the request on %d", handledOn.Load(), calledOn.Load())
	}
	call(context.Background(), "apart")
	if handledOn.Load() == calledOn.Load() {
		t.Errorf("the default handler ran on the request's goroutine")
	}

	time.AfterFunc(1500*time.Millisecond, func() { close(release) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	resp := call(ctx, "stubborn")
	if elapsed := time.Since(start); elapsed < 1400*time.Millisecond {
		t.Errorf("answered after %v, before the handler returned", elapsed)
	}
	if r := wire.DecodeRPC(t, resp.Body); r.Error != nil || r.Result["isError"] == true {
		t.Errorf("late answer: %s", resp.Body)
	}
	if o := outcomes[len(outcomes)-1]; !o.Fault || o.Err == nil {
		t.Errorf("the overrun is not a fault: %+v", o)
	}

	if r := wire.DecodeRPC(t, call(context.Background(), "panics").Body); r.Error == nil || r.Error.Code != -32603 {
		t.Errorf("a panicking inline handler: %+v", r)
	}
	if o := outcomes[len(outcomes)-1]; o.Panic == nil {
		t.Errorf("the panic is not in the outcome: %+v", o)
	}
}

// goroutineID is the calling goroutine's id, from its stack's header.
func goroutineID() int64 {
	var buf [32]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = b[len("goroutine "):]
	id, _ := strconv.ParseInt(string(b[:bytes.IndexByte(b, ' ')]), 10, 64)
	return id
}

// ctxStore is a claims store that, as DynamoDB's client does, fails a
// completion whose context is done.
type ctxStore struct{ claims.Store }

func (c ctxStore) Complete(ctx context.Context, key, owner string, response []byte, oversize bool, expiresAt time.Time) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.Store.Complete(ctx, key, owner, response, oversize, expiresAt)
}

// TestLateInlineResultIsReplayed: a keyed call of an Inline tool that
// returns after its deadline still records its result with its claim, so
// a retry of the key replays it instead of running the tool again.
func TestLateInlineResultIsReplayed(t *testing.T) {
	guard := claims.New(ctxStore{claims.NewMemory()}, &claims.Options{LeaseMargin: 3 * time.Second})
	s := newStubborn(t, guard, &stateless.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`), Inline: true, MaxDuration: 5 * time.Second})
	time.AfterFunc(1300*time.Millisecond, func() { close(s.release) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if r := wire.DecodeRPC(t, s.call(ctx, "stubborn", "k1").Body); r.Error != nil || r.Result["isError"] == true {
		t.Fatalf("late answer: %+v", r)
	}
	s.fast.Store(true)
	r := wire.DecodeRPC(t, s.call(context.Background(), "stubborn", "k1").Body)
	if meta, _ := r.Result["_meta"].(map[string]any); meta == nil || meta[stateless.MetaReplay] != true {
		t.Errorf("the retry is not a replay: %+v", r)
	}
	if n := s.runs.Load(); n != 1 {
		t.Errorf("ran %d times, want 1", n)
	}
}

// TestHangUpOnAStubbornHandler: a caller that goes away while a handler
// that ignores its context runs is answered cancelled, its outcome not a
// fault: the handler is abandoned for the caller's doing, not for an
// overrun of the server's (which stays a fault, TestStubborn*).
func TestHangUpOnAStubbornHandler(t *testing.T) {
	var outcomes []*stateless.Outcome
	srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Observe: func(_ context.Context, o *stateless.Outcome) { outcomes = append(outcomes, o) }})
	release := make(chan struct{})
	defer close(release)
	srv.AddTool(&stateless.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			<-release
			return &stateless.CallToolResult{}, nil
		})
	ctx, hangUp := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, hangUp)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"stubborn","_meta":` + wire.MetaJSON(`{}`) + `}}`
	resp := srv.Handle(ctx, &stateless.Request{Method: "POST", Header: wire.ModernHeaders("tools/call", "stubborn"), Body: []byte(body), Host: "api.example.com"})
	if !bytes.Contains(resp.Body, []byte(`"type":"cancelled"`)) {
		t.Fatalf("a hang-up on a stubborn handler: %s", resp.Body)
	}
	if len(outcomes) != 1 || outcomes[0].Fault || outcomes[0].Kind != "cancelled" {
		t.Fatalf("outcome %+v", outcomes)
	}
}
