// Package wire builds requests as a 2026-07-28 client sends them and
// reads their answers back, for the tests of packages that serve them
// (stateless, tasks) at the level of the wire: raw bodies and headers.
// pkg/mcptest is the higher-level helper for tool authors.
package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

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

// Post sends one request over HTTP with c, and returns the response and
// its body, read whole.
func Post(t testing.TB, c *http.Client, url string, h http.Header, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = h
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
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

// Frames reads an event stream's data lines as they come, one JSON-RPC
// message each (a line that is no JSON object is left out), until the
// stream ends; it closes body then, and the channel.
func Frames(body io.ReadCloser) <-chan map[string]any {
	ch := make(chan map[string]any, 64)
	go func() {
		defer close(ch)
		defer body.Close()
		sc := bufio.NewScanner(body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]any
				if json.Unmarshal([]byte(line), &m) == nil {
					ch <- m
				}
			}
		}
	}()
	return ch
}

// Next is the next frame within d, or nil (none came, or the stream
// ended).
func Next(ch <-chan map[string]any, d time.Duration) map[string]any {
	select {
	case m := <-ch:
		return m
	case <-time.After(d):
		return nil
	}
}

// Buffered is an http.ResponseWriter that keeps the response and cannot
// flush (unlike httptest.ResponseRecorder), as a middleware's buffering
// wrapper may be: what a server writes arrives when ServeHTTP returns.
type Buffered struct {
	Status int
	Body   bytes.Buffer
	header http.Header
}

func (b *Buffered) Header() http.Header {
	if b.header == nil {
		b.header = http.Header{}
	}
	return b.header
}

func (b *Buffered) Write(p []byte) (int, error) { return b.Body.Write(p) }
func (b *Buffered) WriteHeader(status int)      { b.Status = status }
