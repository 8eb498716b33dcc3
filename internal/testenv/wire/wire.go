// Package wire builds requests as a 2026-07-28 client sends them and
// reads their answers back, for the tests of packages that serve them
// (stateless, tasks) at the level of the wire: raw bodies and headers.
// pkg/mcptest is the higher-level helper for tool authors.
package wire

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// MetaJSON is params._meta for revision 2026-07-28 with the client
// capabilities caps (a JSON object).
func MetaJSON(caps string) string {
	return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// ModernHeaders are the headers a correct 2026-07-28 client sends.
func ModernHeaders(method, name string) http.Header {
	h := http.Header{
		"Content-Type":         {"application/json"},
		"Accept":               {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2026-07-28"},
		"Mcp-Method":           {method},
	}
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	return h
}

// Call sends one request through s.Handle.
func Call(t testing.TB, s *stateless.Server, method string, h http.Header, body string) *stateless.Response {
	t.Helper()
	return s.Handle(context.Background(), &stateless.Request{Method: method, Header: h, Body: []byte(body), Host: "api.example.com"})
}

// RPC is a decoded JSON-RPC response.
type RPC struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  map[string]any  `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// DecodeRPC reads a JSON-RPC response, failing t when it is not one.
func DecodeRPC(t testing.TB, body []byte) *RPC {
	t.Helper()
	var r RPC
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	if r.JSONRPC != "2.0" {
		t.Fatalf("jsonrpc = %q in %s", r.JSONRPC, body)
	}
	return &r
}
