package claims_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// shelf is a tool's state in memory: items on a shelf of limited room,
// added by one-step calls whose add is enlisted (claims.Write.Apply).
type shelf struct {
	mu    sync.Mutex
	items []string
	room  int
	// runs counts the handler's runs; effects what it recorded after a
	// commit (claims.OnCommit).
	runs, effects atomic.Int32
}

func (s *shelf) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

var errShelfFull = errors.New("the shelf is full")

// seen is what the tests read of a request's stateless.Outcome.
type seen struct {
	Claim, Kind string
	Fault       bool
	Err         error
}

// oneStepServer serves "put", a tool declared to have no effect but its
// enlisted write, over claims in store, with outcomes recorded; and
// "plain", the same tool undeclared.
func oneStepServer(t *testing.T, store claims.Store, sh *shelf, outcomes *[]seen) *stateless.Server {
	t.Helper()
	var mu sync.Mutex
	srv := stateless.NewServer(stateless.Implementation{Name: "onestep", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Interceptors: []stateless.Interceptor{claims.New(store, nil).Interceptor()},
		Observe: func(_ context.Context, o *stateless.Outcome) {
			if outcomes != nil {
				mu.Lock()
				*outcomes = append(*outcomes, seen{Claim: o.Claim, Kind: o.Kind, Fault: o.Fault, Err: o.Err})
				mu.Unlock()
			}
		}})
	type in struct {
		Item string `json:"item"`
		// Fail answers a tool failure; Plain refuses the write's
		// condition without a tool failure of its own; Slow sleeps.
		Fail  bool   `json:"fail,omitempty"`
		Plain bool   `json:"plain,omitempty"`
		Slow  string `json:"slow,omitempty"`
	}
	put := func(ctx context.Context, req *stateless.ToolRequest, a in) (*stateless.CallToolResult, map[string]any, error) {
		sh.runs.Add(1)
		if d, _ := time.ParseDuration(a.Slow); d > 0 {
			time.Sleep(d)
		}
		if a.Fail {
			return nil, nil, mcperr.NewInvalidArguments("no")
		}
		full := mcperr.NewRefused("shelf_full", map[string]int{"room": sh.room})
		w := claims.Write{OnConditionFailed: full, Apply: func(commit func() bool) error {
			sh.mu.Lock()
			defer sh.mu.Unlock()
			if len(sh.items) >= sh.room {
				if a.Plain {
					return errShelfFull
				}
				return full
			}
			if commit() {
				sh.items = append(sh.items, a.Item)
			}
			return nil
		}}
		if a.Plain {
			w.OnConditionFailed = nil
		}
		if !claims.EnlistWrites(ctx, w) {
			return nil, nil, errors.New("not enlisted")
		}
		if !claims.OnCommit(ctx, func() { sh.effects.Add(1) }) {
			return nil, nil, errors.New("OnCommit refused")
		}
		return nil, map[string]any{"put": a.Item, "run": sh.runs.Load()}, nil
	}
	stateless.AddTool(srv, &stateless.Tool{Name: "put", EnlistedEffectsOnly: true, MaxDuration: time.Second}, put)
	stateless.AddTool(srv, &stateless.Tool{Name: "plain"}, put)
	return srv
}

// TestOneStepCommitAndReplay: a keyed call of a tool with no effect but
// its enlisted write runs its handler, then commits the claim, the write
// and the result at once; the same key again runs the handler (its
// write dropped) and answers the stored result, marked as a replay; a
// key of another call conflicts.
func TestOneStepCommitAndReplay(t *testing.T) {
	sh := &shelf{room: 10}
	var outcomes []seen
	c := mcptest.New(t, oneStepServer(t, claims.NewMemory(), sh, &outcomes))
	c.Principal = "alice"
	first := c.CallTool("put", map[string]any{"item": "jam"}, mcptest.IdempotencyKey("k1"))
	if first.IsError() || first.Replayed() || first.Structured()["put"] != "jam" {
		t.Fatalf("first: %s", first.Raw)
	}
	again := c.CallTool("put", map[string]any{"item": "jam"}, mcptest.IdempotencyKey("k1"))
	if again.IsError() || !again.Replayed() || again.Structured()["run"] != first.Structured()["run"] || again.Text() != first.Text() {
		t.Fatalf("replay: %s\nfirst: %s", again.Raw, first.Raw)
	}
	// The replay is the first answer, marked.
	replayed := maps.Clone(again.Result)
	meta := maps.Clone(replayed["_meta"].(map[string]any))
	delete(meta, stateless.MetaReplay)
	replayed["_meta"] = meta
	if !reflect.DeepEqual(replayed, first.Result) {
		t.Errorf("the replay is not the first answer:\n%v\n%v", replayed, first.Result)
	}
	if n, runs, effects := sh.count(), sh.runs.Load(), sh.effects.Load(); n != 1 || runs != 2 || effects != 1 {
		t.Errorf("%d items, %d runs, %d effects recorded; want 1, 2 (the replay runs the handler) and 1", n, runs, effects)
	}
	other := c.CallTool("put", map[string]any{"item": "honey"}, mcptest.IdempotencyKey("k1"))
	if other.Error == nil || other.Error.Code != -32602 || !contains(other.Error.Data, "idempotency_key_conflict") {
		t.Errorf("another call with the key: %s", other.Raw)
	}
	if sh.count() != 1 {
		t.Errorf("%d items after the conflict", sh.count())
	}
	want := []string{stateless.ClaimNew, stateless.ClaimReplay, stateless.ClaimConflict}
	for i, o := range outcomes {
		if i < len(want) && o.Claim != want[i] {
			t.Errorf("request %d: claim %q, want %q", i, o.Claim, want[i])
		}
	}
	if len(outcomes) != 3 || outcomes[1].Kind != "replay" {
		t.Errorf("outcomes %+v", outcomes)
	}
	// Unkeyed, the call holds no claim: the tool makes its write itself
	// (here: refuses to, and says so).
	if a := c.CallTool("put", map[string]any{"item": "tea"}); !a.IsError() || a.Text() != "not enlisted" {
		t.Errorf("unkeyed: %s", a.Raw)
	}
}

// TestOneStepConditionFailed: when the enlisted write's condition fails
// at commit the call answers the write's tool failure, nothing is
// applied and no result is stored, so the same key succeeds once there
// is room; without a failure of its own the call is answered as not
// committed, retryable.
func TestOneStepConditionFailed(t *testing.T) {
	sh := &shelf{room: 0}
	store := claims.NewMemory()
	var outcomes []seen
	c := mcptest.New(t, oneStepServer(t, store, sh, &outcomes))
	full := c.CallTool("put", map[string]any{"item": "jam"}, mcptest.IdempotencyKey("k"))
	meta, _ := full.Result["_meta"].(map[string]any)
	f, _ := meta[stateless.MetaToolFailure].(map[string]any)
	if !full.IsError() || full.Error != nil || f["code"] != "shelf_full" || f["retryable"] != nil {
		t.Fatalf("a full shelf: %s", full.Raw)
	}
	if o := outcomes[0]; o.Claim != stateless.ClaimNotCommitted || o.Kind != "refused" || o.Fault {
		t.Errorf("its outcome: %+v", o)
	}
	plain := c.CallTool("put", map[string]any{"item": "jam", "plain": true}, mcptest.IdempotencyKey("k-plain"))
	if plain.Error == nil || !contains(plain.Error.Data, "idempotency_not_committed") || !contains(plain.Error.Data, `"retryable":true`) {
		t.Errorf("a refused write without a failure of its own: %s", plain.Raw)
	}
	sh.mu.Lock()
	sh.room = 1
	sh.mu.Unlock()
	ok := c.CallTool("put", map[string]any{"item": "jam"}, mcptest.IdempotencyKey("k"))
	if ok.IsError() || ok.Replayed() {
		t.Fatalf("the same key once there is room: %s", ok.Raw)
	}
	if sh.count() != 1 || sh.effects.Load() != 1 {
		t.Errorf("%d items, %d effects recorded", sh.count(), sh.effects.Load())
	}
}

// TestOneStepFailureNotStored: a tool failure commits nothing and stores
// nothing: the same key runs the tool again.
func TestOneStepFailureNotStored(t *testing.T) {
	sh := &shelf{room: 5}
	c := mcptest.New(t, oneStepServer(t, claims.NewMemory(), sh, nil))
	for range 2 {
		if a := c.CallTool("put", map[string]any{"item": "x", "fail": true}, mcptest.IdempotencyKey("k")); !a.IsError() || a.Replayed() {
			t.Fatalf("failure: %s", a.Raw)
		}
	}
	if sh.runs.Load() != 2 || sh.count() != 0 {
		t.Errorf("%d runs, %d items", sh.runs.Load(), sh.count())
	}
}

// TestOneStepInProgress: a key held in progress (by a call that claimed
// it first) refuses a one-step call as in progress, with the holder's
// lease as the retry-after; nothing is applied.
func TestOneStepInProgress(t *testing.T) {
	sh := &shelf{room: 5}
	store := claims.NewMemory()
	c := mcptest.New(t, oneStepServer(t, store, sh, nil))
	c.Principal = "alice"
	now := time.Now()
	held := claims.Claim{Key: claims.ClaimKey("alice", "put", "k"), Owner: "other", Fingerprint: "whatever", LeaseUntil: now.Add(3 * time.Second), ExpiresAt: now.Add(time.Hour)}
	if taken, _, err := store.Claim(context.Background(), held, now); !taken || err != nil {
		t.Fatal(taken, err)
	}
	// The fingerprint is compared first: another request's.
	if a := c.CallTool("put", map[string]any{"item": "x"}, mcptest.IdempotencyKey("k")); a.Error == nil || !contains(a.Error.Data, "idempotency_key_conflict") {
		t.Errorf("held for another request: %s", a.Raw)
	}
	c2 := mcptest.New(t, oneStepServer(t, store, sh, nil))
	c2.Principal = "bob"
	first := c2.CallTool("put", map[string]any{"item": "x", "slow": "1ms"}, mcptest.IdempotencyKey("k2"))
	if first.IsError() {
		t.Fatal(first.Raw)
	}
	// The same key held in progress by a claim-first call of the same
	// request (another deployment, a task).
	k3 := claims.ClaimKey("bob", "put", "k3")
	_, holder, _ := store.Claim(context.Background(), claims.Claim{Key: claims.ClaimKey("bob", "put", "k2"), Owner: "probe", LeaseUntil: now, ExpiresAt: now.Add(time.Hour)}, now)
	if holder == nil {
		t.Fatal("no record of the first call")
	}
	if taken, _, err := store.Claim(context.Background(), claims.Claim{Key: k3, Owner: "other", Fingerprint: holder.Fingerprint, LeaseUntil: now.Add(3 * time.Second), ExpiresAt: now.Add(time.Hour)}, now); !taken || err != nil {
		t.Fatal(taken, err)
	}
	a := c2.CallTool("put", map[string]any{"item": "x", "slow": "1ms"}, mcptest.IdempotencyKey("k3"))
	if a.Error == nil || !contains(a.Error.Data, "idempotency_key_in_progress") || a.Header.Get("Retry-After") == "" {
		t.Errorf("held in progress: %s %v", a.Raw, a.Header)
	}
	if sh.count() != 1 {
		t.Errorf("%d items", sh.count())
	}
}

// TestOneStepRace: calls with one key at once run their handlers side by
// side; exactly one commits, the others answer its result as replays.
func TestOneStepRace(t *testing.T) {
	sh := &shelf{room: 100}
	c := mcptest.New(t, oneStepServer(t, claims.NewMemory(), sh, nil))
	const n = 12
	answers := make([]*mcptest.Answer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = c.CallTool("put", map[string]any{"item": "x", "slow": "5ms"}, mcptest.IdempotencyKey("race"))
		}()
	}
	wg.Wait()
	replays, firsts := 0, 0
	var run any
	for i, a := range answers {
		switch {
		case a.IsError():
			t.Errorf("racer %d: %s", i, a.Raw)
		case a.Replayed():
			replays++
		default:
			firsts++
		}
		if run == nil {
			run = a.Structured()["run"]
		} else if a.Structured()["run"] != run {
			t.Errorf("racer %d answered run %v, another %v", i, a.Structured()["run"], run)
		}
	}
	if firsts != 1 || replays != n-1 || sh.count() != 1 || sh.effects.Load() != 1 {
		t.Errorf("%d firsts, %d replays, %d items, %d effects", firsts, replays, sh.count(), sh.effects.Load())
	}
}

// TestOneStepAbandoned: a handler still running at its deadline is
// answered with the retryable timeout and commits nothing, even when it
// returns later; the retry runs the tool and commits once.
func TestOneStepAbandoned(t *testing.T) {
	sh := &shelf{room: 5}
	c := mcptest.New(t, oneStepServer(t, claims.NewMemory(), sh, nil))
	a := c.CallTool("put", map[string]any{"item": "x", "slow": "1500ms"}, mcptest.IdempotencyKey("slow"))
	if a.Error == nil || !contains(a.Error.Data, `"type":"timeout"`) {
		t.Fatalf("abandoned: %s", a.Raw)
	}
	time.Sleep(time.Second) // the abandoned handler returns, and enlists
	if sh.count() != 0 || sh.effects.Load() != 0 {
		t.Fatalf("the abandoned handler committed: %d items, %d effects", sh.count(), sh.effects.Load())
	}
	if r := c.CallTool("put", map[string]any{"item": "x", "slow": "1500ms"}, mcptest.IdempotencyKey("slow")); r.Error == nil {
		t.Fatalf("the retry: %s", r.Raw)
	}
	if r := c.CallTool("put", map[string]any{"item": "x"}, mcptest.IdempotencyKey("fast")); r.IsError() {
		t.Fatalf("another key: %s", r.Raw)
	}
	time.Sleep(time.Second)
	if sh.count() != 1 {
		t.Errorf("%d items", sh.count())
	}
}

// TestOneStepAbandonedOverHTTP: over net/http, where the handler runs on
// the request's goroutine and a watchdog answers it at its deadline
// (stateless.Ender), a handler that returns after that commits nothing,
// though the interceptor learns of the abandonment only once it returns:
// its commit ends at its deadline, before the watchdog answers; the
// retry runs the tool and commits once.
func TestOneStepAbandonedOverHTTP(t *testing.T) {
	sh := &shelf{room: 5}
	hs := httptest.NewServer(oneStepServer(t, claims.NewMemory(), sh, nil))
	defer hs.Close()
	call := func(args string) string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"put","arguments":` + args +
			`,"idempotencyKey":"slow","_meta":` + wire.MetaJSON(`{}`) + `}}`
		_, b := wire.Post(t, hs.Client(), hs.URL, wire.ModernHeaders("tools/call", "put"), body)
		return string(b)
	}
	if a := call(`{"item":"x","slow":"1500ms"}`); !strings.Contains(a, `"type":"timeout"`) {
		t.Fatalf("abandoned: %s", a)
	}
	time.Sleep(time.Second) // the abandoned handler returns, and would commit
	if sh.count() != 0 || sh.effects.Load() != 0 {
		t.Fatalf("the abandoned handler committed: %d items, %d effects", sh.count(), sh.effects.Load())
	}
	if a := call(`{"item":"x"}`); strings.Contains(a, `"error"`) || strings.Contains(a, `"isError":true`) {
		t.Fatalf("the retry: %s", a)
	}
	if sh.count() != 1 || sh.effects.Load() != 1 || sh.runs.Load() != 2 {
		t.Errorf("%d items, %d effects, %d runs; want 1, 1, 2", sh.count(), sh.effects.Load(), sh.runs.Load())
	}
}

// TestOneStepOnlyForDeclaredTools: the same handler undeclared claims its
// key first, where an in-memory write cannot be enlisted.
func TestOneStepOnlyForDeclaredTools(t *testing.T) {
	sh := &shelf{room: 5}
	c := mcptest.New(t, oneStepServer(t, claims.NewMemory(), sh, nil))
	if a := c.CallTool("plain", map[string]any{"item": "x"}, mcptest.IdempotencyKey("k")); !a.IsError() || a.Text() != "not enlisted" {
		t.Errorf("undeclared: %s", a.Raw)
	}
}

// TestMemoryCommitAllOrNothing: of two in-memory writes, the second
// refusing leaves the first unmade and the key free.
func TestMemoryCommitAllOrNothing(t *testing.T) {
	m := claims.NewMemory()
	ctx, now := context.Background(), time.Now()
	var made []string
	ok := func(name string) claims.Write {
		return claims.Write{Apply: func(commit func() bool) error {
			if commit() {
				made = append(made, name)
			}
			return nil
		}}
	}
	no := claims.Write{Apply: func(func() bool) error { return errShelfFull }}
	c := claims.Claim{Key: "claim#all-or-nothing", Owner: "a", Fingerprint: "f", ExpiresAt: now.Add(time.Hour)}
	var refused *claims.WriteRefusedError
	if err := m.Commit(ctx, "a", c, []byte(`{}`), false, []claims.Write{ok("first"), no}, now); !errors.As(err, &refused) || refused.Index != 1 || !errors.Is(err, errShelfFull) || !errors.Is(err, claims.ErrWritesRefused) {
		t.Fatalf("refused: %v", err)
	}
	if len(made) != 0 {
		t.Fatalf("made %v", made)
	}
	if err := m.Commit(ctx, "a", c, []byte(`{"ok":1}`), false, []claims.Write{ok("first"), ok("second")}, now); err != nil || fmt.Sprint(made) != "[second first]" {
		t.Fatalf("committed: %v, made %v", err, made)
	}
	// A retry of the same commit (its answer lost) is the commit.
	if err := m.Commit(ctx, "a", c, []byte(`{"ok":1}`), false, []claims.Write{ok("again")}, now); err != nil || len(made) != 2 {
		t.Fatalf("retry: %v, made %v", err, made)
	}
	var held *claims.HeldError
	c.Owner = "b"
	if err := m.Commit(ctx, "b", c, nil, false, []claims.Write{ok("late")}, now); !errors.As(err, &held) || held.Holder.Owner != "a" || string(held.Holder.Response) != `{"ok":1}` || len(made) != 2 {
		t.Fatalf("another owner: %v, made %v", err, made)
	}
}

func contains(raw []byte, s string) bool { return strings.Contains(string(raw), s) }
