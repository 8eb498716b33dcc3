package claims_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// eraser is a server with one confirmed, single-use tool, erase, whose
// second round does what mode says: "" erases (counted), "retry" fails
// with RetryLater, "panic" panics, "timeout" waits out the request's
// deadline, "missing" answers NotFound (not retryable).
type eraser struct {
	srv    *stateless.Server
	erased atomic.Int32
	mode   atomic.Value // string
	sleep  time.Duration
	hang   chan struct{} // mode "hang" waits for it, ignoring its context
}

func newEraser(store claims.Store) *eraser { return newEraserWith(store, nil) }

func newEraserWith(store claims.Store, opts *claims.Options) *eraser {
	g := claims.New(store, opts)
	e := &eraser{srv: stateless.NewServer(stateless.Implementation{Name: "erase", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Interceptors: []stateless.Interceptor{g.Interceptor()}})}
	e.mode.Store("")
	e.hang = make(chan struct{})
	stateless.AddTool(e.srv, &stateless.Tool{Name: "erase", MaxDuration: 300 * time.Millisecond}, func(ctx context.Context, req *stateless.ToolRequest, in struct {
		ID string `json:"id"`
	}) (*stateless.CallToolResult, map[string]bool, error) {
		if _, ok := req.State(); !ok {
			return nil, nil, &stateless.InputRequired{State: []byte("asked"), SingleUse: true,
				Requests: map[string]stateless.InputRequest{"ok": stateless.ElicitForm("Erase?", map[string]any{"type": "object"})}}
		}
		switch e.mode.Load().(string) {
		case "retry":
			return nil, nil, mcperr.NewRetryLater(0, errors.New("table throttled"))
		case "panic":
			panic("the table client panicked")
		case "timeout":
			<-ctx.Done()
			return nil, nil, ctx.Err()
		case "missing":
			return nil, nil, mcperr.NewNotFound("no such thing")
		case "hang":
			<-e.hang // as good as dead: answered at its deadline, never settled
			return nil, nil, errors.New("came back from the dead")
		}
		time.Sleep(e.sleep)
		e.erased.Add(1)
		return nil, map[string]bool{"erased": true}, nil
	})
	return e
}

// call sends erase; state "" is the first round. It returns the decoded
// response.
func (e *eraser) call(ctx context.Context, state, key string) map[string]any {
	params := `{"name":"erase","arguments":{"id":"n1"}`
	if state != "" {
		params += `,"requestState":"` + state + `","inputResponses":{"ok":{"action":"accept","content":{}}}`
	}
	if key != "" {
		params += `,"idempotencyKey":"` + key + `"`
	}
	params += `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}`
	h := http.Header{"Content-Type": {"application/json"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"erase"}}
	resp := e.srv.Handle(ctx, &stateless.Request{Method: "POST", Header: h, Principal: "alice",
		Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`)})
	var out map[string]any
	json.Unmarshal(resp.Body, &out)
	return out
}

func (e *eraser) state(t *testing.T) string {
	t.Helper()
	out := e.call(context.Background(), "", "")
	res, _ := out["result"].(map[string]any)
	s, _ := res["requestState"].(string)
	if s == "" {
		t.Fatalf("no state: %v", out)
	}
	return s
}

// verdict names an answer: erased, replay, refused (-32602 invalid state),
// retryable (a retryable tool failure or refusal), final_error, or the
// answer itself.
func verdict(out map[string]any) string {
	b, _ := json.Marshal(out)
	if res, ok := out["result"].(map[string]any); ok {
		meta, _ := res["_meta"].(map[string]any)
		switch {
		case meta[stateless.MetaReplay] == true:
			return "replay"
		case res["isError"] == true && strings.Contains(string(b), `"retryable":true`):
			return "retryable"
		case res["isError"] == true:
			return "final_error"
		case strings.Contains(string(b), `"erased":true`):
			return "erased"
		}
	}
	if e, ok := out["error"].(map[string]any); ok {
		switch {
		case e["code"] == float64(-32602) && strings.Contains(string(b), "requestState"):
			return "refused"
		case strings.Contains(string(b), `"retryable":true`):
			return "retryable"
		}
	}
	return string(b)
}

// testSingleUse runs the single-use scenarios against store.
func testSingleUse(t *testing.T, store claims.Store) {
	ctx := context.Background()
	t.Run("RetryableFailuresKeepTheState", func(t *testing.T) {
		e := newEraser(store)
		st, key := e.state(t), freshKey(t)
		e.mode.Store("retry")
		if v := verdict(e.call(ctx, st, key)); v != "retryable" {
			t.Fatalf("RetryLater: %s", v)
		}
		e.mode.Store("panic")
		if v := verdict(e.call(ctx, st, key)); !strings.Contains(v, "-32603") {
			t.Fatalf("panic: %s", v)
		}
		e.mode.Store("timeout")
		tctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		v := verdict(e.call(tctx, st, key))
		cancel()
		if v != "retryable" {
			t.Fatalf("timeout: %s", v)
		}
		e.mode.Store("")
		if v := verdict(e.call(ctx, st, key)); v != "erased" || e.erased.Load() != 1 {
			t.Fatalf("the retry after the failures: %s, erased %d", v, e.erased.Load())
		}
		if v := verdict(e.call(ctx, st, key)); v != "replay" {
			t.Errorf("the same key and state again: %s", v)
		}
		if v := verdict(e.call(ctx, st, "")); v != "refused" {
			t.Errorf("the state without the key: %s", v)
		}
		if e.erased.Load() != 1 {
			t.Errorf("erased %d times", e.erased.Load())
		}
	})
	t.Run("UnkeyedRetryAfterFailure", func(t *testing.T) {
		e := newEraser(store)
		st := e.state(t)
		e.mode.Store("retry")
		if v := verdict(e.call(ctx, st, "")); v != "retryable" {
			t.Fatalf("RetryLater: %s", v)
		}
		e.mode.Store("")
		if v := verdict(e.call(ctx, st, "")); v != "erased" {
			t.Fatalf("the retry: %s", v)
		}
		if v := verdict(e.call(ctx, st, "")); v != "refused" || e.erased.Load() != 1 {
			t.Errorf("reuse after success: %s, erased %d", v, e.erased.Load())
		}
	})
	t.Run("FinalFailureSpendsTheState", func(t *testing.T) {
		e := newEraser(store)
		st := e.state(t)
		e.mode.Store("missing")
		if v := verdict(e.call(ctx, st, "")); v != "final_error" {
			t.Fatalf("NotFound: %s", v)
		}
		e.mode.Store("")
		if v := verdict(e.call(ctx, st, "")); v != "refused" || e.erased.Load() != 0 {
			t.Errorf("after a final failure: %s, erased %d", v, e.erased.Load())
		}
	})
	t.Run("KeyedReplayWinsOverRedeemed", func(t *testing.T) {
		e := newEraser(store)
		st, key := e.state(t), freshKey(t)
		if v := verdict(e.call(ctx, st, key)); v != "erased" {
			t.Fatalf("first: %s", v)
		}
		// The response was lost; the client retries as it should.
		if v := verdict(e.call(ctx, st, key)); v != "replay" {
			t.Errorf("retry with the same key and state: %s", v)
		}
		if v := verdict(e.call(ctx, st, key+"-other")); v != "refused" {
			t.Errorf("the state with another key: %s", v)
		}
		if v := verdict(e.call(ctx, st, "")); v != "refused" {
			t.Errorf("the state without a key: %s", v)
		}
		if e.erased.Load() != 1 {
			t.Errorf("erased %d times", e.erased.Load())
		}
	})
	t.Run("KilledCallLapses", func(t *testing.T) { testKilledCallLapses(t, store) })
	t.Run("ConcurrentRedemptions", func(t *testing.T) {
		const n = 8
		for _, keyed := range []bool{false, true} {
			e := newEraser(store)
			e.sleep = 30 * time.Millisecond
			st := e.state(t)
			var wg sync.WaitGroup
			verdicts := make([]string, n)
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := ""
					if keyed {
						key = freshKey(t) + "-" + string(rune('a'+i))
					}
					verdicts[i] = verdict(e.call(ctx, st, key))
				}()
			}
			wg.Wait()
			erased := 0
			for _, v := range verdicts {
				switch v {
				case "erased":
					erased++
				case "refused", "retryable": // spent, or still held by the winner
				default:
					t.Errorf("keyed %v: answer %s", keyed, v)
				}
			}
			if erased != 1 || e.erased.Load() != 1 {
				t.Errorf("keyed %v: %d answered erased, %d ran (%v)", keyed, erased, e.erased.Load(), verdicts)
			}
		}
	})
}

// testKilledCallLapses: a keyed confirmed call whose process dies mid-call
// (its handler abandoned, never settled) holds its key and its state
// until the claim's lease ends — both the same lease — and then the retry
// with the same key and state runs. (The state's redemption used to be
// held for the request's deadline, beyond the claim's lease: the retry
// that took the claim was refused the state, -32602, for good.)
func testKilledCallLapses(t *testing.T, store claims.Store) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	e := newEraserWith(store, &claims.Options{Now: now, LeaseMargin: 2 * time.Second})
	defer close(e.hang)
	st, key := e.state(t), freshKey(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e.mode.Store("hang")
	if v := verdict(e.call(ctx, st, key)); v != "retryable" {
		t.Fatalf("the call that dies: %s", v)
	}
	e.mode.Store("")
	out := e.call(ctx, st, key)
	if v := verdict(out); v != "retryable" || !strings.Contains(fmt.Sprint(out), "idempotency_key_in_progress") {
		t.Fatalf("a retry inside the lease: %v", out)
	}
	without := e.call(ctx, st, "")
	if v := verdict(without); v != "retryable" || !strings.Contains(fmt.Sprint(without), "request_state_in_use") {
		t.Fatalf("the state without the key, inside the lease: %v", without)
	}
	clock.Add(int64(300*time.Millisecond + 2*time.Second + time.Second))
	if v := verdict(e.call(ctx, st, key)); v != "erased" || e.erased.Load() != 1 {
		t.Fatalf("the retry after the lease: %s, erased %d", v, e.erased.Load())
	}
	if v := verdict(e.call(ctx, st, key)); v != "replay" {
		t.Errorf("its retry: %s", v)
	}
}

func freshKey(t *testing.T) string { return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()) }

func TestSingleUseStateMemory(t *testing.T) { testSingleUse(t, claims.NewMemory()) }
