package notebook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// demoClient calls the demo server in-process as one principal.
type demoClient struct {
	t         *testing.T
	srv       *stateless.Server
	principal string
	caps      string
	// timeout, if set, is each request's deadline, as an invocation's.
	timeout time.Duration
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
	ctx := context.Background()
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	resp := c.srv.Handle(ctx, &stateless.Request{Method: "POST", Header: h, Principal: c.principal,
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

func newDemoServer(t *testing.T, env ...string) *stateless.Server {
	cfg, err := endpoint.LoadConfig(func(k string) string {
		for i := 0; i+1 < len(env); i += 2 {
			if env[i] == k {
				return env[i+1]
			}
		}
		return ""
	})
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

// newDemoWith serves the demo over notes.
func newDemoWith(notes NoteStore) *stateless.Server {
	srv := taskServer(stateless.Implementation{Name: "mcp-lambda-demo", Version: "test"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	(&demo{notes: notes}).register(srv)
	return srv
}

// search calls notes_search and returns its notes' ids and nextCursor.
func (c *demoClient) search(query, cursor string) ([]string, string) {
	c.t.Helper()
	args, _ := json.Marshal(map[string]string{"query": query, "cursor": cursor})
	r := c.call("tools/call", "notes_search", `"name":"notes_search","arguments":`+string(args))
	s := structured(r)
	if s == nil {
		c.t.Fatalf("search %q %q: %v", query, cursor, r)
	}
	var ids []string
	for _, n := range s["notes"].([]any) {
		ids = append(ids, n.(map[string]any)["id"].(string))
	}
	next, _ := s["nextCursor"].(string)
	return ids, next
}

func (c *demoClient) add(text string) map[string]any {
	c.t.Helper()
	args, _ := json.Marshal(map[string]string{"text": text})
	return c.call("tools/call", "notes_add", `"name":"notes_add","arguments":`+string(args))
}

// toolFailure is an isError result's machine-readable failure.
func toolFailure(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	if r["isError"] != true {
		t.Fatalf("not a tool error: %v", r)
	}
	meta, _ := r["_meta"].(map[string]any)
	f, _ := meta[stateless.MetaToolFailure].(map[string]any)
	if f == nil {
		t.Fatalf("no failure in %v", r)
	}
	return f
}

// TestSearchPages: notes_search answers at most 50 notes, and following
// its cursors sees every note exactly once, oldest first, for a query too.
func TestSearchPages(t *testing.T) {
	srv := newDemoWith(newMemoryNotes())
	alice := &demoClient{t: t, srv: srv, principal: "alice"}
	var all, milk []string
	for i := range 130 {
		text := fmt.Sprint("note ", i)
		if i%2 == 0 {
			text += " buy MILK"
		}
		id := structured(alice.add(text))["id"].(string)
		all = append(all, id)
		if i%2 == 0 {
			milk = append(milk, id)
		}
	}
	for _, tc := range []struct {
		query string
		want  []string
		pages []int
	}{{"", all, []int{50, 50, 30}}, {"milk", milk, []int{50, 15}}} {
		var seen []string
		var sizes []int
		cursor := ""
		for range 10 {
			ids, next := alice.search(tc.query, cursor)
			seen = append(seen, ids...)
			sizes = append(sizes, len(ids))
			if next == "" {
				break
			}
			cursor = next
		}
		if !slices.Equal(seen, tc.want) || !slices.Equal(sizes, tc.pages) {
			t.Errorf("query %q: pages of %v, saw %d notes (want %v, %d)", tc.query, sizes, len(seen), tc.pages, len(tc.want))
		}
	}
}

// TestSearchScanBound: a search reads at most 500 notes per answer; a
// query that matches late answers a short page with a cursor, and the
// next page finds the match.
func TestSearchScanBound(t *testing.T) {
	notes := &countingNotes{NoteStore: newMemoryNotes()}
	srv := newDemoWith(notes)
	alice := &demoClient{t: t, srv: srv, principal: "alice"}
	for i := range 700 {
		text := "nothing to see"
		if i == 650 {
			text = "the needle"
		}
		alice.add(text)
	}
	notes.reset()
	ids, next := alice.search("needle", "")
	if len(ids) != 0 || next == "" || notes.read > 500 {
		t.Fatalf("first page: %v, cursor %q, %d notes read", ids, next, notes.read)
	}
	ids, next = alice.search("needle", next)
	if len(ids) != 1 || next != "" {
		t.Errorf("second page: %v, cursor %q", ids, next)
	}
}

// TestSearchCursors: a cursor is only good for the principal and the
// query it was given for; anything else is an invalid-arguments tool
// error, which is not retryable.
func TestSearchCursors(t *testing.T) {
	srv := newDemoWith(newMemoryNotes())
	alice := &demoClient{t: t, srv: srv, principal: "alice"}
	bob := &demoClient{t: t, srv: srv, principal: "bob"}
	for i := range 60 {
		alice.add(fmt.Sprint("alice ", i))
		bob.add(fmt.Sprint("bob ", i))
	}
	_, aliceCursor := alice.search("", "")
	_, bobCursor := bob.search("", "")
	if aliceCursor == "" || bobCursor == "" {
		t.Fatal("no cursors")
	}
	if ids, next := alice.search("", aliceCursor); len(ids) != 10 || next != "" {
		t.Fatalf("alice's second page: %d notes, cursor %q", len(ids), next)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(aliceCursor)
	flip := func(i int) string {
		b := bytes.Clone(raw)
		b[i] ^= 1
		return base64.RawURLEncoding.EncodeToString(b)
	}
	for name, tc := range map[string]struct {
		c      *demoClient
		query  string
		cursor string
	}{
		"alice's cursor, used by bob":       {bob, "", aliceCursor},
		"bob's cursor, used by alice":       {alice, "", bobCursor},
		"alice's cursor, for another query": {alice, "alice", aliceCursor},
		"another position":                  {alice, "", flip(5)},
		"another check":                     {alice, "", flip(15)},
		"another version":                   {alice, "", flip(0)},
		"not base64":                        {alice, "", "not a cursor!"},
		"too short":                         {alice, "", aliceCursor[:20]},
		"too long":                          {alice, "", aliceCursor + "AAAA"},
		"a note id":                         {alice, "", "n0000000000000000"},
	} {
		args, _ := json.Marshal(map[string]string{"query": tc.query, "cursor": tc.cursor})
		r := tc.c.call("tools/call", "notes_search", `"name":"notes_search","arguments":`+string(args))
		if f := toolFailure(t, r); f["type"] != "invalid_arguments" || f["retryable"] != nil {
			t.Errorf("%s: %v", name, r)
		}
		if strings.Contains(toJSON(r), "alice ") && tc.c == bob {
			t.Errorf("%s: bob sees alice's notes: %v", name, r)
		}
	}
}

// TestNoteLimit: a full note book refuses the next add with a tool error
// that names the limit and is not retryable; another principal's book is
// not affected, and a delete makes room.
func TestNoteLimit(t *testing.T) {
	// The note limit, not the calls quota (600 a minute), is under test.
	srv := newDemoServer(t, endpoint.EnvQuotas, "calls=off")
	alice := &demoClient{t: t, srv: srv, principal: "alice", caps: `{"elicitation":{}}`}
	bob := &demoClient{t: t, srv: srv, principal: "bob"}
	var first string
	for i := range MaxNotesPerOwner {
		r := alice.add(fmt.Sprint("note ", i))
		if structured(r)["id"] == nil {
			t.Fatalf("add %d: %v", i, r)
		}
		if i == 0 {
			first = structured(r)["id"].(string)
		}
	}
	r := alice.add("one too many")
	f := toolFailure(t, r)
	if f["type"] != "refused" || f["code"] != "note_limit_reached" || f["retryable"] != nil ||
		toJSON(f["details"]) != `{"limit":1000}` || !strings.Contains(toJSON(r["content"]), "note_limit_reached") {
		t.Errorf("the 1001st add: %v", r)
	}
	if r := bob.add("bob's"); structured(r)["id"] == nil {
		t.Errorf("bob: %v", r)
	}
	state := alice.call("tools/call", "notes_delete", `"name":"notes_delete","arguments":{"id":"`+first+`"}`)["requestState"].(string)
	done := alice.call("tools/call", "notes_delete", `"name":"notes_delete","arguments":{"id":"`+first+`"},"inputResponses":{"confirm":{"action":"accept","content":{"confirm":true}}},"requestState":"`+state+`"`)
	if structured(done)["deleted"] != true {
		t.Fatalf("delete: %v", done)
	}
	if r := alice.add("in its place"); structured(r)["id"] == nil {
		t.Errorf("after a delete: %v", r)
	}
}

// TestNoteStoreFull: the memory store's total limit is a refusal too:
// five callers' notes and counters fill a store of ten items.
func TestNoteStoreFull(t *testing.T) {
	srv := newDemoWith(newMemoryNotesLimited(3, 10))
	for i := range 5 {
		c := &demoClient{t: t, srv: srv, principal: fmt.Sprint("p", i)}
		if r := c.add("note"); structured(r)["id"] == nil {
			t.Fatal(r)
		}
	}
	r := (&demoClient{t: t, srv: srv, principal: "late"}).add("note")
	if f := toolFailure(t, r); f["type"] != "refused" || f["code"] != "note_store_full" || toJSON(f["details"]) != `{"limit":10}` || f["retryable"] != nil {
		t.Errorf("%v", r)
	}
}

// TestStoreFailureRetryable: a store that fails answers a retryable tool
// error (the cause goes to the log line, not to the model).
func TestStoreFailureRetryable(t *testing.T) {
	srv := newDemoWith(failingNotes{})
	c := &demoClient{t: t, srv: srv, principal: "alice"}
	for _, r := range []map[string]any{c.add("note"), c.call("tools/call", "notes_search", `"name":"notes_search","arguments":{}`)} {
		if f := toolFailure(t, r); f["type"] != "retryable" || f["retryable"] != true || strings.Contains(toJSON(r), "table on fire") {
			t.Errorf("%v", r)
		}
	}
}

// TestDigestPages: notes_digest reads the book a page at a time and
// counts every note.
func TestDigestPages(t *testing.T) {
	notes := &countingNotes{NoteStore: newMemoryNotes()}
	srv := newDemoWith(notes)
	alice := &demoClient{t: t, srv: srv, principal: "alice"}
	for i := range 250 {
		alice.add(fmt.Sprint("two words ", i))
	}
	notes.reset()
	d := structured(alice.call("tools/call", "notes_digest", `"name":"notes_digest","arguments":{}`))
	if d["notes"] != float64(250) || d["words"] != float64(750) || notes.lists != 3 || notes.largest > 100 {
		t.Errorf("digest %v; %d reads, at most %d notes each", d, notes.lists, notes.largest)
	}
}

// TestDigestPause: pauseMs waits after each progress report (the whole
// call takes at least the pauses), within 0 to 5000.
func TestDigestPause(t *testing.T) {
	srv := newDemoWith(newMemoryNotes())
	alice := &demoClient{t: t, srv: srv, principal: "alice"}
	for i := range 150 {
		alice.add(fmt.Sprint("note ", i))
	}
	start := time.Now()
	d := structured(alice.call("tools/call", "notes_digest", `"name":"notes_digest","arguments":{"pauseMs":150}`))
	if took := time.Since(start); d["notes"] != float64(150) || took < 300*time.Millisecond {
		t.Errorf("digest %v after %v, want 150 notes after two pauses of 150 ms", d, took)
	}
	for _, bad := range []string{"-1", "5001"} {
		if r := alice.call("tools/call", "notes_digest", `"name":"notes_digest","arguments":{"pauseMs":`+bad+`}`); r["isError"] != true {
			t.Errorf("pauseMs %s: %v, want a tool error", bad, r)
		}
	}
}

// TestCompleteNoteIDs: completion offers the caller's ids by prefix, at
// most 100.
func TestCompleteNoteIDs(t *testing.T) {
	srv := newDemoWith(newMemoryNotes())
	alice := &demoClient{t: t, srv: srv, principal: "alice"}
	var ids []string
	for i := range 150 {
		ids = append(ids, structured(alice.add(fmt.Sprint("note ", i)))["id"].(string))
	}
	complete := func(c *demoClient, value string) map[string]any {
		r := c.call("completion/complete", "", `"ref":{"type":"ref/resource","uri":"notes://note/{id}"},"argument":{"name":"id","value":"`+value+`"}`)
		comp, _ := r["completion"].(map[string]any)
		if comp == nil {
			t.Fatalf("%q: %v", value, r)
		}
		return comp
	}
	if c := complete(alice, ""); len(c["values"].([]any)) != 100 || c["hasMore"] != true {
		t.Errorf("all: %d values, hasMore %v", len(c["values"].([]any)), c["hasMore"])
	}
	if c := complete(alice, ids[149]); toJSON(c["values"]) != `["`+ids[149]+`"]` {
		t.Errorf("a whole id: %v", c)
	}
	prefix := ids[70][:16]
	var want []string
	for _, id := range ids {
		if strings.HasPrefix(id, prefix) {
			want = append(want, id)
		}
	}
	if c := complete(alice, prefix); toJSON(c["values"]) != toJSON(want) || c["hasMore"] != nil {
		t.Errorf("prefix %s: %v, want %v", prefix, c, want)
	}
	if c := complete(&demoClient{t: t, srv: srv, principal: "bob"}, ""); c["values"] != nil && len(c["values"].([]any)) != 0 {
		t.Errorf("bob completes alice's ids: %v", c)
	}
}

// countingNotes counts what the demo reads from its store.
type countingNotes struct {
	NoteStore
	mu                   sync.Mutex
	lists, read, largest int
}

func (c *countingNotes) List(ctx context.Context, owner, after string, limit int) ([]Note, bool, error) {
	notes, more, err := c.NoteStore.List(ctx, owner, after, limit)
	c.mu.Lock()
	c.lists++
	c.read += len(notes)
	c.largest = max(c.largest, limit)
	c.mu.Unlock()
	return notes, more, err
}

func (c *countingNotes) reset() {
	c.mu.Lock()
	c.lists, c.read, c.largest = 0, 0, 0
	c.mu.Unlock()
}

// failingNotes is a store that cannot be reached.
type failingNotes struct{}

var errOnFire = errors.New("table on fire")

func (failingNotes) Add(context.Context, string, string) (Note, error) { return Note{}, errOnFire }
func (failingNotes) Get(context.Context, string, string) (Note, error) { return Note{}, errOnFire }
func (failingNotes) Delete(context.Context, string, string) error      { return errOnFire }
func (failingNotes) List(context.Context, string, string, int) ([]Note, bool, error) {
	return nil, false, errOnFire
}
func (failingNotes) RecordExport(context.Context, string, string, string) error { return errOnFire }

// TestPromptBounded: the summary prompt quotes the oldest 50 notes and
// says there are more.
func TestPromptBounded(t *testing.T) {
	srv := newDemoWith(newMemoryNotes())
	alice := &demoClient{t: t, srv: srv, principal: "alice"}
	for i := range 60 {
		alice.add(fmt.Sprintf("note %02d", i))
	}
	p := toJSON(alice.call("prompts/get", "summarize_notes", `"name":"summarize_notes","arguments":{}`))
	if strings.Count(p, `- note `) != 50 || !strings.Contains(p, "note 49") || strings.Contains(p, "note 50") || !strings.Contains(p, "there are more") {
		t.Errorf("prompt: %s", p)
	}
}

// TestDemoSchemas: every demo tool's schemas resolve (registration leaves
// them to first use; this is where a bad one fails).
func TestDemoSchemas(t *testing.T) {
	if err := newDemoServer(t).Verify(); err != nil {
		t.Fatal(err)
	}
}
