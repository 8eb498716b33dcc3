package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

func TestStreamEvents(t *testing.T) {
	for v, want := range map[string][]apigw.Kind{"": nil, "rest": {apigw.KindREST}, "rest, function-url": {apigw.KindREST, apigw.KindFunctionURL}} {
		got, err := StreamEvents(func(string) string { return v })
		if err != nil || len(got) != len(want) || len(want) > 0 && got[0] != want[0] {
			t.Errorf("%q: %v %v", v, got, err)
		}
	}
	if _, err := StreamEvents(func(string) string { return "http" }); err == nil {
		t.Error("an HTTP API cannot stream, and was accepted")
	}
}

// TestStreamInvoke: a REST event, when REST streams, is answered in the
// HTTP integration response format (a JSON prelude, eight NULs, the
// body); an HTTP API event in the same function is answered whole, as
// ever.
func TestStreamInvoke(t *testing.T) {
	srv := stateless.NewServer(stateless.Implementation{Name: "s", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	stateless.AddTool(srv, &stateless.Tool{Name: "echo"}, func(ctx context.Context, req *stateless.ToolRequest, in struct {
		Text string `json:"text"`
	}) (*stateless.CallToolResult, any, error) {
		return nil, nil, nil
	})
	h := &Invocations{Server: srv, Gateway: &apigw.Handler{Server: srv}, StreamKinds: []apigw.Kind{apigw.KindREST}}
	read := func(name string) (string, []byte) {
		t.Helper()
		payload, err := os.ReadFile("../../events/" + name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := h.invokeEarly(context.Background(), payload, nil)
		if err != nil {
			t.Fatal(err)
		}
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return r.(interface{ ContentType() string }).ContentType(), out
	}
	ct, out := read("rest-v1-tools-list.json")
	head, body, ok := bytes.Cut(out, make([]byte, 8))
	var prelude struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if ct != "application/vnd.awslambda.http-integration-response" || !ok || json.Unmarshal(head, &prelude) != nil ||
		prelude.StatusCode != 200 || prelude.Headers["Content-Type"] != "application/json" || !strings.Contains(string(body), `"tools":[`) {
		t.Fatalf("REST, streamed: %s %q", ct, out)
	}
	ct, out = read("tools-list.json")
	var whole struct {
		StatusCode int    `json:"statusCode"`
		Body       string `json:"body"`
	}
	if ct != "application/json" || json.Unmarshal(out, &whole) != nil || whole.StatusCode != 200 || !strings.Contains(whole.Body, `"tools":[`) {
		t.Fatalf("HTTP API, buffered: %s %q", ct, out)
	}
}

// TestStreamEndsAtAStubbornHandlersDeadline: a streamed invocation whose
// tool ignores its context is answered at the tool's deadline and its
// stream closed (the runtime posts it and goes on to the next
// invocation), while the handler runs on; the prelude carries no
// connection header.
func TestStreamEndsAtAStubbornHandlersDeadline(t *testing.T) {
	srv := stateless.NewServer(stateless.Implementation{Name: "s", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	release := make(chan struct{})
	defer close(release)
	srv.AddTool(&stateless.Tool{Name: "stubborn", InputSchema: json.RawMessage(`{"type":"object"}`), MaxDuration: 200 * time.Millisecond},
		func(context.Context, *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			<-release
			return &stateless.CallToolResult{}, nil
		})
	h := &Invocations{Server: srv, Gateway: &apigw.Handler{Server: srv}, StreamKinds: []apigw.Kind{apigw.KindREST}}
	payload := stubbornCall(t, "rest-v1-tools-list.json")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	r, err := h.invokeEarly(ctx, payload, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan []byte, 1)
	go func() {
		out, _ := io.ReadAll(r)
		read <- out
	}()
	var out []byte
	select {
	case out = <-read:
	case <-time.After(5 * time.Second):
		t.Fatalf("the stream did not end at the tool's 200ms deadline")
	}
	if took := time.Since(start); took < 200*time.Millisecond {
		t.Errorf("the stream ended after %v, before the tool's deadline", took)
	}
	head, body, _ := bytes.Cut(out, make([]byte, 8))
	var prelude struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
	}
	if err := json.Unmarshal(head, &prelude); err != nil || prelude.StatusCode != 200 || !strings.Contains(string(body), `"type":"timeout"`) {
		t.Fatalf("answer %q", out)
	}
	if _, ok := prelude.Headers["Connection"]; ok {
		t.Errorf("the prelude carries a connection header: %v", prelude.Headers)
	}
}

// stubbornCall is the event in events/file, a tools/list, made a
// tools/call of the tool "stubborn": its body, and its Mcp-Method and
// Mcp-Name headers in each header member the event has, as it spells
// them.
func stubbornCall(t *testing.T, file string) []byte {
	t.Helper()
	payload, err := os.ReadFile("../../events/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var event map[string]any
	if err := json.Unmarshal(payload, &event); err != nil {
		t.Fatal(err)
	}
	for _, member := range []string{"headers", "multiValueHeaders"} {
		h, _ := event[member].(map[string]any)
		for k := range h {
			if !strings.EqualFold(k, "mcp-method") {
				continue
			}
			name := k[:len("mcp-")] + "name"
			if k[len("mcp-")] == 'M' {
				name = k[:len("mcp-")] + "Name"
			}
			if member == "headers" {
				h[k], h[name] = "tools/call", "stubborn"
			} else {
				h[k], h[name] = []string{"tools/call"}, []string{"stubborn"}
			}
		}
	}
	event["body"] = strings.Replace(event["body"].(string), `"method":"tools/list","params":{`, `"method":"tools/call","params":{"name":"stubborn",`, 1)
	if payload, err = json.Marshal(event); err != nil {
		t.Fatal(err)
	}
	return payload
}
