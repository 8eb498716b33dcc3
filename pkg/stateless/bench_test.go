package stateless_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// benchServer is the benchmark's server: the trivial echo tool of the
// comparison with the peers (bench/ module), and nothing else.
func benchServer() *stateless.Server {
	s := stateless.NewServer(stateless.Implementation{Name: "bench", Version: "1.0.0"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	stateless.AddTool(s, &stateless.Tool{Name: "echo", Description: "Echo text."},
		func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, echoOut, error) {
			return nil, echoOut(in), nil
		})
	return s
}

func benchHTTP(b *testing.B, method, name, body string) {
	s := benchServer()
	h := wire.ModernHeaders(method, name)
	payload := []byte(body)
	// Check the answer before timing it.
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/mcp", bytes.NewReader(payload))
	r.Header = h.Clone()
	s.ServeHTTP(rec, r)
	if rec.Code != 200 || bytes.Contains(rec.Body.Bytes(), []byte(`"error"`)) {
		b.Fatalf("%d %s", rec.Code, rec.Body)
	}
	want := bytes.Clone(rec.Body.Bytes())
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/mcp", bytes.NewReader(payload))
		r.Header = h
		s.ServeHTTP(rec, r)
		if !bytes.Equal(rec.Body.Bytes(), want) {
			b.Fatalf("answer changed: %s", rec.Body)
		}
	}
}

func BenchmarkHTTPToolsList(b *testing.B) {
	benchHTTP(b, "tools/list", "", req("1", "tools/list", withMeta("")))
}

func BenchmarkHTTPToolsCall(b *testing.B) {
	benchHTTP(b, "tools/call", "echo", req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"`+strings.Repeat("x", 100)+`"}`)))
}

// BenchmarkHandleToolsCall is the call without net/http: the path a
// Lambda event adapter takes.
func BenchmarkHandleToolsCall(b *testing.B) {
	s := benchServer()
	r := &stateless.Request{Method: http.MethodPost, Header: wire.ModernHeaders("tools/call", "echo"),
		Body: []byte(req("1", "tools/call", withMeta(`"name":"echo","arguments":{"text":"`+strings.Repeat("x", 100)+`"}`)))}
	want := `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"text\":\"` + strings.Repeat("x", 100) +
		`\"}"}],"structuredContent":{"text":"` + strings.Repeat("x", 100) + `"},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bench","version":"1.0.0"}}}}`
	if resp := s.Handle(context.Background(), r); string(resp.Body) != want {
		b.Fatalf("answer %s\nwant   %s", resp.Body, want)
	}
	b.ReportAllocs()
	for b.Loop() {
		if resp := s.Handle(context.Background(), r); resp.Status != 200 || string(resp.Body) != want {
			b.Fatalf("%d %s", resp.Status, resp.Body)
		}
	}
}
