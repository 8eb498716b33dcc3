package interop

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// keyHeader is a transport that sends an Idempotency-Key header, as a
// client without params.idempotencyKey support would: one header line per
// key.
type keyHeader struct {
	keys []string
	next http.RoundTripper
}

func (k keyHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Del("Idempotency-Key")
	for _, key := range k.keys {
		r.Header.Add("Idempotency-Key", key)
	}
	return k.next.RoundTrip(r)
}

// testGoSDKIdempotency (a cell of the client matrix, matrix_test.go)
// checks that the go-sdk client surfaces each idempotency outcome intact:
// the replayed result with its marker, and the in-progress, conflict and
// invalid-key refusals (HTTP 400) as JSON-RPC errors with their code and
// data. A key refused as invalid runs nothing. serialized: the door runs
// one invocation at a time (the emulator), so a concurrent duplicate
// waits for the first and gets its replay.

func serveKeyed(t *testing.T) string {
	mux := http.NewServeMux()
	mux.Handle("/mcp", NewKeyedServer())
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

func testGoSDKIdempotency(t *testing.T, serve serveFunc, serialized bool) {
	url := serve(t)
	ctx := testContext(t)

	connect := func(keys ...string) *mcp.ClientSession {
		c := mcp.NewClient(goSDKClientInfo, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url,
			HTTPClient: &http.Client{Transport: keyHeader{keys, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}

	cs := connect("pay-42")
	first, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 42}})
	if err != nil || first.IsError {
		t.Fatalf("first: %v %+v", err, first)
	}
	again, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 42}})
	if err != nil {
		t.Fatal(err)
	}
	if again.Meta[stateless.MetaReplay] != true {
		t.Errorf("replay not marked: %+v", again.Meta)
	}
	b1, _ := json.Marshal(first.StructuredContent)
	b2, _ := json.Marshal(again.StructuredContent)
	if string(b1) != string(b2) {
		t.Errorf("replay %s vs %s", b2, b1)
	}

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 43}})
	e := rpcError(t, err)
	var data map[string]any
	if json.Unmarshal(e.Data, &data); e.Code != -32602 || data["type"] != "idempotency_key_conflict" {
		t.Errorf("conflict surfaced as %d %s", e.Code, e.Data)
	}

	// Malformed and ambiguous keys are refused, and nothing runs: the
	// next call to run is the second. Through the Lambda front the two
	// header lines arrive joined with a comma, and are refused the same.
	for _, keys := range [][]string{{"=?base64?###?="}, {"=?base64?cGF5LTQ?="}, {""}, {"pay-44", "pay-45"}} {
		_, err := connect(keys...).CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 44}})
		e := rpcError(t, err)
		if json.Unmarshal(e.Data, &data); e.Code != -32602 || data["type"] != "idempotency_key_invalid" || data["reason"] == nil {
			t.Errorf("key %q surfaced as %d %s", keys, e.Code, e.Data)
		}
	}
	next, err := connect("pay-44").CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 44}})
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := next.StructuredContent.(map[string]any); out["run"] != float64(2) {
		t.Errorf("the call after the refusals is run %v, want 2: a refused call ran", out["run"])
	}

	slow := connect("pay-slow")
	done := make(chan error, 1)
	go func() {
		_, err := slow.CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 1, "waitMs": 500}})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	dup, err := slow.CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 1, "waitMs": 500}})
	if serialized {
		if err != nil || dup.Meta[stateless.MetaReplay] != true {
			t.Errorf("serialized duplicate: %v %+v", err, dup)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return
	}
	e = rpcError(t, err)
	if json.Unmarshal(e.Data, &data); e.Code != -32600 || data["type"] != "idempotency_key_in_progress" || data["retryable"] != true || data["retryAfterMs"] == nil {
		t.Errorf("in progress surfaced as %d %s", e.Code, e.Data)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
