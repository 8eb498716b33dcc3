package tasks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// The helpers of the extension's tests: a request as a 2026-07-28 client
// sends it, and its answer read back.

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}
type echoOut struct {
	Text string `json:"text"`
}

func metaJSON(caps string) string {
	return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// modernHeaders are the headers a correct 2026-07-28 client sends.
func modernHeaders(method, name string) http.Header {
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

func call(t testing.TB, s *stateless.Server, method string, h http.Header, body string) *stateless.Response {
	t.Helper()
	return s.Handle(context.Background(), &stateless.Request{Method: method, Header: h, Body: []byte(body), Host: "api.example.com"})
}

type rpc struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  map[string]any  `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func decodeRPC(t testing.TB, body []byte) *rpc {
	t.Helper()
	var r rpc
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	if r.JSONRPC != "2.0" {
		t.Fatalf("jsonrpc = %q in %s", r.JSONRPC, body)
	}
	return &r
}
