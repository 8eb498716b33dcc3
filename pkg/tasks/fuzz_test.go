package tasks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
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
// answers' shape) against a task waiting for input ("$ID" in the params
// and the name stands for its id): never a panic or a 5xx, always one
// JSON-RPC answer, and the task moves only as the extension says: woken
// by a tasks/update that answered the key it asked, cancelled by a
// tasks/cancel that was answered. Seeds: below, and
// testdata/fuzz/FuzzTaskMethods.
func FuzzTaskMethods(f *testing.F) {
	// A server per input: each makes one task, in a store of its own.
	newServer := func() (*tasks.Extension, *stateless.Server) {
		ext := tasks.New(tasks.Options{Store: tasks.NewMemory(), Dispatch: func(context.Context, string) error { return nil }})
		srv := stateless.NewServer(stateless.Implementation{Name: "fuzz", Version: "1"},
			&stateless.Options{})
		ext.Install(srv)
		stateless.AddTool(srv, &stateless.Tool{Name: "ask", TaskSupport: stateless.TaskSupportRequired},
			func(context.Context, *stateless.ToolRequest, struct{}) (*stateless.CallToolResult, any, error) {
				return nil, nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"a": stateless.ListRoots()}}
			})
		return ext, srv
	}
	caps := map[string]any{"roots": map[string]any{}, "extensions": map[string]any{stateless.ExtensionTasks: map[string]any{}}}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		f.Add(m, `{"taskId":"$ID"}`, "$ID")
		f.Add(m, `{"taskId":"$ID","inputResponses":{"a":{"roots":[]}}}`, "$ID")
		f.Add(m, `{"taskId":"$ID","inputResponses":{"b":{"roots":[]}}}`, "$ID")
		f.Add(m, `{"taskId":7}`, "7")
		f.Add(m, `{"taskId":"$ID","taskId":"x"}`, "$ID")
	}
	f.Add("tasks/update", `{"taskId":"$ID","inputResponses":{"a":[]}}`, "$ID")
	f.Add("tasks/update", `{"taskId":"$ID","inputResponses":"a"}`, "$ID")
	f.Add("tasks/get", `{"taskId":"../../etc"}`, "../../etc")
	f.Fuzz(func(t *testing.T, method, params, name string) {
		if len(params) > 4096 || len(name) > 256 || !utf8.ValidString(method) {
			return
		}
		ext, srv := newServer()
		c := mcptest.New(t, srv)
		c.Capabilities = caps
		id, _ := c.CallTool("ask", nil).Result["taskId"].(string)
		if id == "" {
			t.Fatal("no task")
		}
		if err := ext.Run(context.Background(), id); err != nil {
			t.Fatal(err)
		}
		params, name = strings.ReplaceAll(params, "$ID", id), strings.ReplaceAll(name, "$ID", id)
		body := `{"jsonrpc":"2.0","id":1,"method":` + quote(method) + `,"params":` + params + `}`
		// The _meta the methods need, spliced in when params is an object.
		if len(params) > 1 && params[0] == '{' {
			meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + stateless.ExtensionTasks + `":{}}}}`
			if strings.TrimSpace(params[1:]) != "}" {
				meta += ","
			}
			body = `{"jsonrpc":"2.0","id":1,"method":` + quote(method) + `,"params":{` + meta + params[1:] + `}`
		}
		h := http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"},
			"Mcp-Protocol-Version": {stateless.Version20260728}, "Mcp-Method": {method}, "Mcp-Name": {name}}
		resp := srv.Handle(context.Background(), &stateless.Request{Method: http.MethodPost, Header: h, Body: []byte(body), Principal: "anonymous"})
		if resp.Status >= 500 {
			t.Fatalf("%d for %s", resp.Status, body)
		}
		var msg map[string]json.RawMessage
		if json.Unmarshal(resp.Body, &msg) != nil || (msg["result"] == nil) == (msg["error"] == nil) {
			t.Fatalf("not one JSON-RPC answer: %s", resp.Body)
		}
		answered := msg["result"] != nil
		st := c.Call("tasks/get", map[string]any{"taskId": id}).Result["status"]
		switch {
		case st == "input_required":
		case st == "working" && answered && method == "tasks/update" && answersA(params):
		case st == "cancelled" && answered && method == "tasks/cancel":
		default:
			t.Fatalf("the task is %v after %s: %s", st, body, resp.Body)
		}
	})
}

// answersA reports whether tasks/update params answer the key "a" with
// an object.
func answersA(params string) bool {
	var p struct {
		InputResponses map[string]json.RawMessage `json:"inputResponses"`
	}
	if json.Unmarshal([]byte(params), &p) != nil {
		return false
	}
	a := p.InputResponses["a"]
	return len(a) > 0 && a[0] == '{'
}
