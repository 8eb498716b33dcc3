package apigw

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

func BenchmarkInvokeEcho(b *testing.B) {
	s := stateless.NewServer(stateless.Implementation{Name: "b", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	type in struct {
		Text string `json:"text"`
	}
	stateless.AddTool(s, &stateless.Tool{Name: "echo"}, func(ctx context.Context, r *stateless.ToolRequest, x in) (*stateless.CallToolResult, in, error) {
		return nil, x, nil
	})
	h := &Handler{Server: s}
	ev := []byte(`{"version":"2.0","routeKey":"POST /mcp","rawPath":"/mcp","headers":{"content-type":"application/json","accept":"application/json, text/event-stream","mcp-protocol-version":"2026-07-28","mcp-method":"tools/call","mcp-name":"echo","host":"abc.execute-api.us-east-1.amazonaws.com","user-agent":"x","x-forwarded-for":"1.2.3.4","x-amzn-trace-id":"Root=1-abc"},"requestContext":{"accountId":"1","apiId":"abc","domainName":"abc.execute-api.us-east-1.amazonaws.com","http":{"method":"POST","path":"/mcp","protocol":"HTTP/1.1","sourceIp":"1.2.3.4","userAgent":"x"},"requestId":"r","routeKey":"POST /mcp","stage":"$default"},"body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello hello h\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}","isBase64Encoded":false}`)
	want, err := h.Invoke(context.Background(), ev)
	if err != nil || !strings.Contains(string(want), `"statusCode":200`) ||
		!strings.Contains(string(want), `\"structuredContent\":{\"text\":\"hello hello`) {
		b.Fatalf("answer %s (%v)", want, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		out, err := h.Invoke(context.Background(), ev)
		if err != nil || !bytes.Equal(out, want) {
			b.Fatalf("answer changed: %s (%v)", out, err)
		}
	}
}
