package notebook

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// TestKeyedAddInMemory: locally (claims and notes in memory) a keyed add
// commits in one step as on DynamoDB: the note is added with the call's
// claim, once; its replay answers the same note, adds none, and records
// nothing (no "note added" record, no NotesAdded metric: the handler ran,
// but its add was not committed).
func TestKeyedAddInMemory(t *testing.T) {
	ep, out := localEndpoint(t)
	if _, ok := ep.Claims.(claims.Committer); !ok {
		t.Fatalf("the local claims store %T does not commit in one step", ep.Claims)
	}
	c := &demoClient{t: t, srv: ep.Server, principal: "alice"}
	args := `"name":"notes_add","arguments":{"text":"once"},"idempotencyKey":"k-once"`
	first := c.call("tools/call", "notes_add", args)
	replay := c.call("tools/call", "notes_add", args)
	id, _ := structured(first)["id"].(string)
	if id == "" || meta(first)[stateless.MetaReplay] != nil {
		t.Fatalf("first: %v", first)
	}
	if meta(replay)[stateless.MetaReplay] != true || structured(replay)["id"] != id {
		t.Fatalf("replay: %v", replay)
	}
	if ids, _ := c.search("once", ""); len(ids) != 1 || ids[0] != id {
		t.Errorf("notes %v, want the one answered, %s", ids, id)
	}
	added, metrics := 0, 0
	for _, l := range strings.Split(strings.TrimSpace(out.Take()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		if m["msg"] == "note added" {
			added++
		}
		if v, ok := m["NotesAdded"].(float64); ok {
			metrics += int(v)
		}
	}
	if added != 1 || metrics != 1 {
		t.Errorf("%d \"note added\" records and %d NotesAdded, want one each (the replay's run records nothing)", added, metrics)
	}
}

// TestKeyedAddFullBookInMemory: a keyed add to a full book is answered
// note_limit_reached by its commit's condition, stores nothing, and adds
// nothing; once a delete makes room, the same key adds the note. Keys
// racing for the last place add one note.
func TestKeyedAddFullBookInMemory(t *testing.T) {
	notes := newMemoryNotesLimited(2, 100)
	srv := taskServer(stateless.Implementation{Name: "full", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Interceptors: []stateless.Interceptor{claims.New(claims.NewMemory(), nil).Interceptor()}})
	(&demo{notes: notes}).register(srv)
	c := &demoClient{t: t, srv: srv, principal: "alice", caps: `{"elicitation":{}}`}
	first, _ := structured(c.add("first"))["id"].(string)
	const racers = 8
	answers := raceAdds(c, racers)
	added, full := 0, 0
	for i, r := range answers {
		switch addedOrFull(t, r) {
		case "added":
			added++
		case "full":
			full++
		default:
			t.Errorf("racer %d: %v", i, r)
		}
	}
	if ids, _ := c.search("", ""); added != 1 || full != racers-1 || len(ids) != 2 {
		t.Fatalf("%d added, %d told the book is full; notes %v", added, full, ids)
	}
	key := `"name":"notes_add","arguments":{"text":"later"},"idempotencyKey":"later"`
	if r := c.call("tools/call", "notes_add", key); toolFailure(t, r)["code"] != "note_limit_reached" {
		t.Fatalf("a full book: %v", r)
	}
	state := c.call("tools/call", "notes_delete", `"name":"notes_delete","arguments":{"id":"`+first+`"}`)["requestState"].(string)
	done := c.call("tools/call", "notes_delete", `"name":"notes_delete","arguments":{"id":"`+first+`"},"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"`+state+`"`)
	if structured(done)["deleted"] != true {
		t.Fatalf("delete: %v", done)
	}
	r := c.call("tools/call", "notes_add", key)
	if structured(r)["id"] == nil || meta(r)[stateless.MetaReplay] != nil {
		t.Errorf("the same key once there is room: %v", r)
	}
}

func meta(r map[string]any) map[string]any {
	m, _ := r["_meta"].(map[string]any)
	return m
}

// raceAdds sends racers keyed notes_add calls at once, each with a key of
// its own, and returns their answers in order.
func raceAdds(c *demoClient, racers int) []map[string]any {
	answers := make([]map[string]any, racers)
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = c.call("tools/call", "notes_add", fmt.Sprintf(`"name":"notes_add","arguments":{"text":"racer"},"idempotencyKey":"racer-%d"`, i))
		}()
	}
	wg.Wait()
	return answers
}

// addedOrFull says what a keyed add answered: "added" (the note), "full"
// (the book's note_limit_reached, not retryable), or "".
func addedOrFull(t *testing.T, r map[string]any) string {
	switch {
	case structured(r)["id"] != nil:
		return "added"
	case r["isError"] == true && toolFailure(t, r)["code"] == "note_limit_reached" && toolFailure(t, r)["retryable"] == nil:
		return "full"
	}
	return ""
}
