package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// demoClient calls the demo server in-process as one principal.
type demoClient struct {
	t         *testing.T
	srv       *stateless.Server
	principal string
	caps      string
}

func (c *demoClient) call(method, target, params string) map[string]any {
	c.t.Helper()
	h := http.Header{"Content-Type": {"application/json"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}, "Accept": {"application/json, text/event-stream"}}
	if target != "" {
		h.Set("Mcp-Name", target)
	}
	caps := c.caps
	if caps == "" {
		caps = "{}"
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	if params == "" {
		params = "{" + meta + "}"
	} else {
		params = "{" + params + "," + meta + "}"
	}
	resp := c.srv.Handle(context.Background(), &stateless.Request{Method: "POST", Header: h, Principal: c.principal,
		Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`)})
	var out struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal(resp.Body, &out); err != nil {
		c.t.Fatalf("%s: %s", method, resp.Body)
	}
	if out.Error != nil {
		return map[string]any{"error": out.Error}
	}
	return out.Result
}

func structured(r map[string]any) map[string]any {
	s, _ := r["structuredContent"].(map[string]any)
	return s
}

func newDemoServer(t *testing.T) *stateless.Server {
	cfg, err := LoadConfig(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	srv, err := newServer(cfg, discardLogger(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

func TestDemoNoteBook(t *testing.T) {
	srv := newDemoServer(t)
	alice := &demoClient{t: t, srv: srv, principal: "alice", caps: `{"elicitation":{}}`}
	bob := &demoClient{t: t, srv: srv, principal: "bob"}

	id := structured(alice.call("tools/call", "notes_add", `"name":"notes_add","arguments":{"text":"Buy milk and bread"}`))["id"].(string)
	if !validNoteID(id) {
		t.Fatalf("id %q", id)
	}
	alice.call("tools/call", "notes_add", `"name":"notes_add","arguments":{"text":"Call Ada"}`)
	if r := alice.call("tools/call", "notes_add", `"name":"notes_add","arguments":{"text":"  "}`); r["isError"] != true {
		t.Errorf("empty note accepted: %v", r)
	}

	found := structured(alice.call("tools/call", "notes_search", `"name":"notes_search","arguments":{"query":"MILK"}`))["notes"].([]any)
	if len(found) != 1 || found[0].(map[string]any)["id"] != id {
		t.Errorf("search: %v", found)
	}
	// Notes belong to their writer.
	if n := structured(bob.call("tools/call", "notes_search", `"name":"notes_search","arguments":{}`))["notes"].([]any); len(n) != 0 {
		t.Errorf("bob sees alice's notes: %v", n)
	}
	if r := bob.call("resources/read", "notes://note/"+id, `"uri":"notes://note/`+id+`"`); r["error"] == nil {
		t.Errorf("bob reads alice's note: %v", r)
	}
	if r := alice.call("resources/read", "notes://note/"+id, `"uri":"notes://note/`+id+`"`); !strings.Contains(toJSON(r), "Buy milk") {
		t.Errorf("read: %v", r)
	}

	// Delete asks first, then deletes on an accepted confirmation.
	first := alice.call("tools/call", "notes_delete", `"name":"notes_delete","arguments":{"id":"`+id+`"}`)
	if first["resultType"] != "input_required" || !strings.Contains(toJSON(first), "Buy milk and bread") {
		t.Fatalf("first round: %v", first)
	}
	state := first["requestState"].(string)
	declined := alice.call("tools/call", "notes_delete", `"name":"notes_delete","arguments":{"id":"`+id+`"},"inputResponses":{"confirm":{"action":"decline"}},"requestState":"`+state+`"`)
	if !strings.Contains(toJSON(declined), "kept the note") {
		t.Errorf("decline: %v", declined)
	}
	// The confirmation is single-use: the declined state cannot be
	// answered again; a new question is asked.
	if r := alice.call("tools/call", "notes_delete", `"name":"notes_delete","arguments":{"id":"`+id+`"},"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"`+state+`"`); !strings.Contains(toJSON(r), "-32602") {
		t.Errorf("a redeemed state answered again: %v", r)
	}
	state = alice.call("tools/call", "notes_delete", `"name":"notes_delete","arguments":{"id":"`+id+`"}`)["requestState"].(string)
	done := alice.call("tools/call", "notes_delete", `"name":"notes_delete","arguments":{"id":"`+id+`"},"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"`+state+`"`)
	if structured(done)["deleted"] != true {
		t.Errorf("accept: %v", done)
	}
	if n := structured(alice.call("tools/call", "notes_search", `"name":"notes_search","arguments":{}`))["notes"].([]any); len(n) != 1 {
		t.Errorf("after delete: %v", n)
	}
	// Without the elicitation capability the question cannot be asked.
	if r := bob.call("tools/call", "notes_delete", `"name":"notes_delete","arguments":{"id":"`+id+`"}`); toJSON(r["error"]) == "null" || !strings.Contains(toJSON(r), "-32021") {
		t.Errorf("no capability: %v", r)
	}

	// Digest counts words; the prompt lists the notes; completion offers ids.
	if d := structured(alice.call("tools/call", "notes_digest", `"name":"notes_digest","arguments":{}`)); d["notes"] != float64(1) || d["words"] != float64(2) {
		t.Errorf("digest: %v", d)
	}
	if p := alice.call("prompts/get", "summarize_notes", `"name":"summarize_notes","arguments":{"focus":"todo"}`); !strings.Contains(toJSON(p), "Call Ada") || !strings.Contains(toJSON(p), "focusing on todo") {
		t.Errorf("prompt: %v", p)
	}
	if c := alice.call("completion/complete", "", `"ref":{"type":"ref/prompt","name":"summarize_notes"},"argument":{"name":"focus","value":"t"}`); toJSON(c["completion"]) != `{"total":1,"values":["todo"]}` {
		t.Errorf("completion: %v", c["completion"])
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
