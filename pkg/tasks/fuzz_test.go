package tasks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"unicode/utf8"

	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

// FuzzDecodeEvent: a worker event is decoded only when it is exactly
// {"mcpTask": <non-empty string>}, as encoding/json reads that string; a
// gateway event (any other member) never is; and what AppendEvent writes
// decodes back to its id.
//
// The seeds are in testdata/fuzz/FuzzDecodeEvent.
func FuzzDecodeEvent(f *testing.F) {
	f.Fuzz(func(t *testing.T, payload []byte) {
		if len(payload) > 512 {
			return
		}
		id, err := tasks.DecodeEvent(payload)
		if err != nil {
			if id != "" {
				t.Fatalf("error %v with id %q", err, id)
			}
		} else {
			var m map[string]json.RawMessage
			if json.Unmarshal(payload, &m) != nil || len(m) != 1 {
				t.Fatalf("decoded %q from %q, which is not an object of one member", id, payload)
			}
			var want string
			if json.Unmarshal(m["mcpTask"], &want) != nil || want != id || id == "" {
				t.Fatalf("decoded %q from %q; encoding/json reads %q", id, payload, want)
			}
		}
		if s := string(payload); s != "" && utf8.ValidString(s) {
			back, err := tasks.DecodeEvent(tasks.AppendEvent(nil, s))
			if err != nil || back != s {
				t.Fatalf("AppendEvent(%q) decodes to %q, %v", s, back, err)
			}
		}
	})
}

// FuzzTaskMethods runs arbitrary params of tasks/get, tasks/update and
// tasks/cancel (their decoding, the Mcp-Name check against taskId, the
// answers' shape) against a server with a task waiting for input: never
// a panic or a 5xx, always one JSON-RPC answer, and the task is woken
// only by an answer to the key it asked. Seeds: the task's own id below,
// and testdata/fuzz/FuzzTaskMethods.
func FuzzTaskMethods(f *testing.F) {
	ext := tasks.New(tasks.Options{Store: tasks.NewMemory(), Dispatch: func(context.Context, string) error { return nil }})
	srv := stateless.NewServer(stateless.Implementation{Name: "fuzz", Version: "1"},
		&stateless.Options{Interceptors: []stateless.Interceptor{ext.Interceptor()}})
	ext.Serve(srv)
	stateless.AddTool(srv, &stateless.Tool{Name: "ask", TaskSupport: stateless.TaskSupportRequired},
		func(context.Context, *stateless.ToolRequest, struct{}) (*stateless.CallToolResult, any, error) {
			return nil, nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"a": stateless.ListRoots()}}
		})
	c := mcptest.New(f, srv)
	c.Capabilities = map[string]any{"roots": map[string]any{}, "extensions": map[string]any{stateless.ExtensionTasks: map[string]any{}}}
	id, _ := c.CallTool("ask", nil).Result["taskId"].(string)
	if id == "" {
		f.Fatal("no task")
	}
	if err := ext.Run(context.Background(), id); err != nil {
		f.Fatal(err)
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		f.Add(m, `{"taskId":"`+id+`"}`, id)
		f.Add(m, `{"taskId":"`+id+`","inputResponses":{"b":{"roots":[]}}}`, id)
		f.Add(m, `{"taskId":7}`, "7")
		f.Add(m, `{"taskId":"`+id+`","taskId":"x"}`, id)
	}
	f.Add("tasks/update", `{"taskId":"`+id+`","inputResponses":{"a":[]}}`, id)
	f.Add("tasks/update", `{"taskId":"`+id+`","inputResponses":"a"}`, id)
	f.Add("tasks/get", `{"taskId":"../../etc"}`, "../../etc")
	f.Fuzz(func(t *testing.T, method, params, name string) {
		if len(params) > 4096 || len(name) > 256 || !utf8.ValidString(method) {
			return
		}
		body := `{"jsonrpc":"2.0","id":1,"method":` + quote(method) + `,"params":` + params + `}`
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"},
			"Mcp-Protocol-Version": {stateless.Version20260728}, "Mcp-Method": {method}, "Mcp-Name": {name}}
		// The _meta the methods need, spliced in when params is an object.
		if b := []byte(params); len(b) > 1 && b[0] == '{' {
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + stateless.ExtensionTasks + `":{}}}}`
			if len(b) > 2 {
				meta += ","
			}
			body = `{"jsonrpc":"2.0","id":1,"method":` + quote(method) + `,"params":{` + meta + params[1:] + `}`
		}
		resp := srv.Handle(context.Background(), &stateless.Request{Method: http.MethodPost, Header: h, Body: []byte(body), Principal: "anonymous"})
		if resp.Status >= 500 {
			t.Fatalf("%d for %s", resp.Status, body)
		}
		var msg map[string]json.RawMessage
		if json.Unmarshal(resp.Body, &msg) != nil || (msg["result"] == nil) == (msg["error"] == nil) {
			t.Fatalf("not one JSON-RPC answer: %s", resp.Body)
		}
		get := mcptest.New(t, srv)
		get.Capabilities = c.Capabilities
		st := get.Call("tasks/get", map[string]any{"taskId": id}).Result["status"]
		if st != "input_required" && st != "cancelled" {
			t.Fatalf("the task is %v after %s", st, body)
		}
	})
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }
