package stateless_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestUnidentifiedIsRefused: a request whose transport saw an identity
// source but no usable identity is refused 401 with a JSON-RPC error, and
// no handler runs; it is never served as the anonymous caller. The
// transport checks come first.
func TestUnidentifiedIsRefused(t *testing.T) {
	f := newFixture(t, nil)
	body := req("7", "tools/call", withMeta(`"name":"echo","arguments":{"text":"x"}`))
	for _, principal := range []string{"", "jwt:https://issuer.example#u"} {
		resp := f.srv.Handle(context.Background(), &stateless.Request{Method: http.MethodPost,
			Header: wire.ModernHeaders("tools/call", "echo"), Body: []byte(body), Host: "api.example.com",
			Principal: principal, Unidentified: true})
		if resp.Status != http.StatusUnauthorized {
			t.Fatalf("principal %q: status %d, body %s", principal, resp.Status, resp.Body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type = %q", ct)
		}
		r := wire.DecodeRPC(t, resp.Body)
		if r.Error == nil || r.Error.Code != -32600 || r.Error.Message == "" || r.Result != nil || r.ID != nil {
			t.Errorf("principal %q: body %s", principal, resp.Body)
		}
	}
	if n := f.echoRan.Load(); n != 0 {
		t.Errorf("the handler ran %d times", n)
	}

	// The transport's own refusals still come first.
	resp := f.srv.Handle(context.Background(), &stateless.Request{Method: http.MethodGet,
		Header: wire.ModernHeaders("tools/call", "echo"), Host: "api.example.com", Unidentified: true})
	if resp.Status != http.StatusMethodNotAllowed {
		t.Errorf("GET: status %d", resp.Status)
	}

	// The same request without the mark is served (as anonymous).
	resp = wire.Call(t, f.srv, http.MethodPost, wire.ModernHeaders("tools/call", "echo"), body)
	if resp.Status != http.StatusOK || wire.DecodeRPC(t, resp.Body).Error != nil {
		t.Errorf("unmarked: status %d, body %s", resp.Status, resp.Body)
	}
}
