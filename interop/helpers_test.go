package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// testTimeout bounds every test's conversation with the server.
const testTimeout = 20 * time.Second

// Protocol revisions the clients are pinned to.
const (
	v20260728 = "2026-07-28"
	v20251125 = "2025-11-25"
	v20250618 = "2025-06-18"
	v20250326 = "2025-03-26"
)

// legacyVersions are the initialize-era revisions the server serves.
var legacyVersions = []string{v20251125, v20250618, v20250326}

// serveFunc starts a fixture server for one test and returns the URL of
// its MCP endpoint. The suites take one so that the same clients can be
// run against other deployments of [NewFixtureServer] (for example a
// Lambda emulator) with the same expectations.
type serveFunc func(t *testing.T) string

// startServer is the serveFunc for net/http: it serves a fresh fixture
// server with httptest on loopback, at /mcp.
func startServer(t *testing.T) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", NewFixtureServer())
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// testContext returns a context that ends with the test or after
// testTimeout, whichever comes first.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// exchange is one HTTP request and its response, as a client sent and
// received it.
type exchange struct {
	Method     string
	ReqHeader  http.Header
	ReqBody    []byte
	Status     int
	RespHeader http.Header
	RespBody   []byte
}

// rpcMethod returns the JSON-RPC method of the request, or "".
func (e exchange) rpcMethod() string {
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(e.ReqBody, &m)
	return m.Method
}

// recorder is an http.RoundTripper that keeps every exchange, so tests can
// assert on the wire and dump it when they fail.
type recorder struct {
	mu  sync.Mutex
	log []exchange
}

// newRecorder returns a recorder whose log is written to t's output if t
// fails.
func newRecorder(t *testing.T) *recorder {
	r := &recorder{}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for i, e := range r.exchanges() {
			t.Logf("exchange %d: %s %s\n  request headers: %v\n  request: %s\n  status %d, headers: %v\n  response: %s",
				i, e.Method, e.rpcMethod(), mcpHeaders(e.ReqHeader), e.ReqBody, e.Status, e.RespHeader, e.RespBody)
		}
	})
	return r
}

// client returns an HTTP client that records through r.
func (r *recorder) client() *http.Client { return &http.Client{Transport: r} }

// RoundTrip implements http.RoundTripper.
func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	e := exchange{Method: req.Method, ReqHeader: req.Header.Clone()}
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		e.ReqBody = b
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	e.Status, e.RespHeader, e.RespBody = resp.StatusCode, resp.Header.Clone(), b
	r.mu.Lock()
	r.log = append(r.log, e)
	r.mu.Unlock()
	return resp, nil
}

// exchanges returns a copy of the log.
func (r *recorder) exchanges() []exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]exchange(nil), r.log...)
}

// calls returns the POSTed JSON-RPC requests with method, in order.
func (r *recorder) calls(method string) []exchange {
	var out []exchange
	for _, e := range r.exchanges() {
		if e.Method == http.MethodPost && e.rpcMethod() == method {
			out = append(out, e)
		}
	}
	return out
}

// mcpHeaders keeps the MCP-specific request headers, for logs.
func mcpHeaders(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if strings.HasPrefix(k, "Mcp-") || k == "Accept" || k == "Content-Type" {
			out[k] = v
		}
	}
	return out
}

// rpcResponse is a JSON-RPC response, loosely decoded.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  map[string]any  `json:"result"`
	Error   *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

// decodeResponse decodes the JSON-RPC response of e, from a JSON body or
// from the last message of an event stream.
func decodeResponse(t *testing.T, e exchange) rpcResponse {
	t.Helper()
	body := e.RespBody
	if strings.HasPrefix(e.RespHeader.Get("Content-Type"), "text/event-stream") {
		var last []byte
		for line := range strings.Lines(string(body)) {
			if d, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data:"); ok {
				last = []byte(strings.TrimSpace(d))
			}
		}
		body = last
	}
	var r rpcResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("response to %s is not JSON-RPC: %v: %s", e.rpcMethod(), err, e.RespBody)
	}
	return r
}

// requestID returns the raw JSON-RPC id of e's request.
func requestID(t *testing.T, e exchange) string {
	t.Helper()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(e.ReqBody, &m); err != nil {
		t.Fatalf("request is not JSON-RPC: %v: %s", err, e.ReqBody)
	}
	return string(m.ID)
}

// requestParams decodes the params of e's JSON-RPC request.
func requestParams(t *testing.T, e exchange) map[string]any {
	t.Helper()
	var m struct {
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal(e.ReqBody, &m); err != nil {
		t.Fatalf("request is not JSON-RPC: %v: %s", err, e.ReqBody)
	}
	return m.Params
}

// asMap returns v as a JSON object, failing the test if it is not one.
func asMap(t *testing.T, v any, what string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s = %#v (%T), want a JSON object", what, v, v)
	}
	return m
}

// remarshal converts v to out through JSON.
func remarshal(t *testing.T, v, out any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("unmarshal into %T: %v: %s", out, err, b)
	}
}

// schemaShape is the part of a tool schema the tests check.
type schemaShape struct {
	Type       string `json:"type"`
	Properties map[string]struct {
		Type string `json:"type"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// checkSchema asserts that schema is an object schema with exactly the
// properties props (name -> JSON type), all of them required.
func checkSchema(t *testing.T, what string, schema any, props map[string]string) {
	t.Helper()
	var s schemaShape
	remarshal(t, schema, &s)
	if s.Type != "object" {
		t.Errorf("%s: type = %q, want object", what, s.Type)
	}
	if len(s.Properties) != len(props) {
		t.Errorf("%s: %d properties, want %d: %+v", what, len(s.Properties), len(props), s.Properties)
	}
	for name, typ := range props {
		if got := s.Properties[name].Type; got != typ {
			t.Errorf("%s: property %q has type %q, want %q", what, name, got, typ)
		}
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	for name := range props {
		if !req[name] {
			t.Errorf("%s: property %q is not required (required = %v)", what, name, s.Required)
		}
	}
}
