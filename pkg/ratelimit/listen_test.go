package ratelimit_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/ratelimit"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestListenStreamsHoldSlots: an open listen stream holds one of its
// principal's stream slots until it ends: with one slot, a second listen
// of the same caller is refused, retryably (rate_limited, Retry-After 5), while the first is open, another
// caller's is not, and once the first ends the slot is free again.
func TestListenStreamsHoldSlots(t *testing.T) {
	srv := stateless.NewServer(stateless.Implementation{Name: "l", Version: "1"}, &stateless.Options{
		Interceptors: []stateless.Interceptor{(&ratelimit.StreamLimit{Slots: &ratelimit.MemorySlots{}, Max: 1}).Interceptor()},
	})
	stateless.AddTool(srv, &stateless.Tool{Name: "t"}, func(context.Context, *stateless.ToolRequest, struct{}) (*stateless.CallToolResult, any, error) {
		return &stateless.CallToolResult{}, nil, nil
	})
	hs := httptest.NewServer(&stateless.HTTPHandler{Server: srv, Principal: func(r *http.Request) string { return r.Header.Get("X-Who") }})
	defer hs.Close()
	open := func(ctx context.Context, who string) (*http.Response, error) {
		body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL, strings.NewReader(body))
		req.Header = wire.ModernHeaders("subscriptions/listen", "")
		req.Header.Set("X-Who", who)
		return http.DefaultClient.Do(req)
	}
	acknowledged := func(resp *http.Response) bool {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "notifications/subscriptions/acknowledged") {
				return true
			}
		}
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	first, err := open(ctx, "alice")
	if err != nil || first.StatusCode != 200 {
		t.Fatalf("first listen: %v %v", first, err)
	}
	// Read the acknowledgement so the slot is surely held.
	sc := bufio.NewScanner(first.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "acknowledged") {
	}
	second, err := open(context.Background(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(second.Body)
	second.Body.Close()
	if second.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(b), `"type":"rate_limited"`) || second.Header.Get("Retry-After") != "5" {
		cancel()
		t.Fatalf("second listen of alice: %d %v %s", second.StatusCode, second.Header, b)
	}
	bctx, bcancel := context.WithCancel(context.Background())
	bob, err := open(bctx, "bob")
	if err != nil || bob.StatusCode != 200 || !acknowledged(bob) {
		t.Fatalf("bob's listen: %v %v", bob, err)
	}
	bcancel()
	cancel() // alice hangs up: the stream ends and gives its slot back
	first.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		again, err := open(context.Background(), "alice")
		if err != nil {
			t.Fatal(err)
		}
		again.Body.Close()
		if again.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice's slot was not given back: %d", again.StatusCode)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
