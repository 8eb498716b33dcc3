package interop

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// keyHeader is a transport that sends an Idempotency-Key header, as a
// client without params.idempotencyKey support would.
type keyHeader struct {
	key  string
	next http.RoundTripper
}

func (k keyHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Idempotency-Key", k.key)
	return k.next.RoundTrip(r)
}

// TestGoSDKIdempotency checks that the go-sdk client surfaces each
// idempotency outcome intact: the replayed result with its marker, and the
// in-progress (HTTP 409) and conflict (HTTP 422) refusals as JSON-RPC
// errors with their code and data.
func TestGoSDKIdempotency(t *testing.T) {
	srv := stateless.NewServer(stateless.Implementation{Name: "keyed", Version: "1"},
		&stateless.Options{Idempotency: claims.New(claims.NewMemory(), nil)})
	var mu sync.Mutex
	runs := 0
	type in struct {
		Amount int `json:"amount"`
		Wait   int `json:"waitMs,omitempty"`
	}
	stateless.AddTool(srv, &stateless.Tool{Name: "transfer"}, func(ctx context.Context, req *stateless.ToolRequest, a in) (*stateless.CallToolResult, map[string]int, error) {
		mu.Lock()
		runs++
		mu.Unlock()
		time.Sleep(time.Duration(a.Wait) * time.Millisecond)
		return nil, map[string]int{"moved": a.Amount}, nil
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv)
	ts := httptest.NewServer(mux)
	defer ts.Close()
	ctx := testContext(t)

	connect := func(key string) *mcp.ClientSession {
		c := mcp.NewClient(goSDKClientInfo, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp",
			HTTPClient: &http.Client{Transport: keyHeader{key, http.DefaultTransport}}}, nil)
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
	if string(b1) != string(b2) || runs != 1 {
		t.Errorf("replay %s vs %s, runs %d", b2, b1, runs)
	}

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 43}})
	e := rpcError(t, err)
	var data map[string]any
	if json.Unmarshal(e.Data, &data); e.Code != -32602 || data["type"] != "idempotency_key_conflict" {
		t.Errorf("conflict surfaced as %d %s", e.Code, e.Data)
	}

	slow := connect("pay-slow")
	done := make(chan error, 1)
	go func() {
		_, err := slow.CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 1, "waitMs": 500}})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	_, err = slow.CallTool(ctx, &mcp.CallToolParams{Name: "transfer", Arguments: map[string]any{"amount": 1, "waitMs": 500}})
	e = rpcError(t, err)
	if json.Unmarshal(e.Data, &data); e.Code != -32600 || data["type"] != "idempotency_key_in_progress" || data["retryable"] != true || data["retryAfterMs"] == nil {
		t.Errorf("in progress surfaced as %d %s", e.Code, e.Data)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Errorf("runs = %d, want 2", runs)
	}
}
