package notebook

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestExportLocal: in local mode the export runs as a task in this
// process: refused -32021 to a client without the extension, polled to
// completion by one with it, with the caller's notes only; an
// out-of-range duration is the task's tool error.
func TestExportLocal(t *testing.T) {
	srv := newDemoServer(t)
	alice := &demoClient{t: t, srv: srv, principal: "alice"}
	alice.add("alice's note")
	(&demoClient{t: t, srv: srv, principal: "bob"}).add("bob's note")
	if r := alice.call("tools/call", "notes_export", `"name":"notes_export","arguments":{"seconds":0}`); fmt.Sprint(r["error"]) == "<nil>" ||
		r["error"].(map[string]any)["code"] != float64(-32021) {
		t.Fatalf("without the extension: %v", r)
	}
	alice.caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	poll := func(id string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := alice.call("tasks/get", id, `"taskId":"`+id+`"`)
			if st["status"] != "working" || time.Now().After(deadline) {
				return st
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	r := alice.call("tools/call", "notes_export", `"name":"notes_export","arguments":{"seconds":601}`)
	if id, _ := r["taskId"].(string); id == "" {
		t.Fatalf("no task: %v", r)
	} else if st := poll(id); st["status"] != "completed" || st["result"].(map[string]any)["isError"] != true {
		t.Fatalf("601 seconds: %v", st)
	}
	r = alice.call("tools/call", "notes_export", `"name":"notes_export","arguments":{"seconds":1}`)
	id, _ := r["taskId"].(string)
	if r["resultType"] != "task" || id == "" {
		t.Fatalf("with the extension: %v", r)
	}
	st := poll(id)
	res, _ := st["result"].(map[string]any)
	md := fmt.Sprint(structured(res)["markdown"])
	if st["status"] != "completed" || !strings.Contains(md, "alice's note") || strings.Contains(md, "bob's note") {
		t.Fatalf("ended %v", st)
	}
}

// TestExportRecordsItsRun: a completed export records its run once, under
// its task and its caller; a cancelled one records nothing.
func TestExportRecordsItsRun(t *testing.T) {
	notes := newMemoryNotes()
	alice := &demoClient{t: t, srv: newDemoWith(notes), principal: "alice", caps: `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`}
	ctx := context.Background()
	wait := func(id string) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := alice.call("tasks/get", id, `"taskId":"`+id+`"`)
			if s, _ := st["status"].(string); s != "working" || time.Now().After(deadline) {
				return s
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	done, _ := alice.call("tools/call", "notes_export", `"name":"notes_export","arguments":{"seconds":0}`)["taskId"].(string)
	if s := wait(done); s != "completed" {
		t.Fatalf("export ended %s", s)
	}
	if n, _ := notes.exportRuns(ctx, "alice", done); n != 1 {
		t.Errorf("completed export: %d runs recorded", n)
	}
	if n, _ := notes.exportRuns(ctx, "bob", done); n != 0 {
		t.Errorf("bob: %d runs", n)
	}
	stopped, _ := alice.call("tools/call", "notes_export", `"name":"notes_export","arguments":{"seconds":30}`)["taskId"].(string)
	alice.call("tasks/cancel", stopped, `"taskId":"`+stopped+`"`)
	if s := wait(stopped); s != "cancelled" {
		t.Fatalf("cancelled export ended %s", s)
	}
	time.Sleep(1500 * time.Millisecond) // the worker's cancel check
	if n, _ := notes.exportRuns(ctx, "alice", stopped); n != 0 {
		t.Errorf("cancelled export: %d runs recorded", n)
	}
}

// flakyNotes fails its first few List and RecordExport calls, as a store
// that is restarting does.
type flakyNotes struct {
	*tableNotes
	mu                sync.Mutex
	lists, records    int
	failLists, failRe int
}

func (f *flakyNotes) List(ctx context.Context, owner, after string, limit int) ([]Note, bool, error) {
	f.mu.Lock()
	f.lists++
	fail := f.lists <= f.failLists
	f.mu.Unlock()
	if fail {
		return nil, false, errOnFire
	}
	return f.tableNotes.List(ctx, owner, after, limit)
}

func (f *flakyNotes) RecordExport(ctx context.Context, owner, taskID, run string) error {
	f.mu.Lock()
	f.records++
	fail := f.records <= f.failRe
	f.mu.Unlock()
	if fail {
		// The write may have been applied, its answer lost: the run is
		// recorded, then the call fails.
		_ = f.tableNotes.RecordExport(ctx, owner, taskID, run)
		return errOnFire
	}
	return f.tableNotes.RecordExport(ctx, owner, taskID, run)
}

// TestExportOutlastsAnOutage: a store that fails a few times while the
// export runs is tried again; the task completes with the notes, and its
// run is recorded once though its record was written three times.
func TestExportOutlastsAnOutage(t *testing.T) {
	notes := &flakyNotes{tableNotes: newMemoryNotes(), failLists: 3, failRe: 2}
	ctx := context.Background()
	if _, err := notes.tableNotes.Add(ctx, "alice", "alice's note"); err != nil {
		t.Fatal(err)
	}
	alice := &demoClient{t: t, srv: newDemoWith(notes), principal: "alice", caps: `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`}
	id, _ := alice.call("tools/call", "notes_export", `"name":"notes_export","arguments":{"seconds":0}`)["taskId"].(string)
	deadline := time.Now().Add(10 * time.Second)
	st := alice.call("tasks/get", id, `"taskId":"`+id+`"`)
	for st["status"] == "working" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
		st = alice.call("tasks/get", id, `"taskId":"`+id+`"`)
	}
	res, _ := st["result"].(map[string]any)
	if st["status"] != "completed" || res["isError"] == true || !strings.Contains(fmt.Sprint(structured(res)["markdown"]), "alice's note") {
		t.Fatalf("ended %v", st)
	}
	if n, _ := notes.exportRuns(ctx, "alice", id); n != 1 || notes.records != 3 || notes.lists != 4 {
		t.Errorf("%d runs recorded, %d record writes, %d lists", n, notes.records, notes.lists)
	}
}

// TestExportAsksTitle: with askTitle the export task waits for input,
// asking for the title; tasks/update answers it and the export is titled
// so, on one line and at most 200 characters; a declined question is
// the default title; a client without elicitation gets a failed task
// that says which capability it lacks.
func TestExportAsksTitle(t *testing.T) {
	srv := newDemoServer(t)
	alice := &demoClient{t: t, srv: srv, principal: "alice", caps: `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`}
	alice.add("a note")
	wait := func(id, not string) map[string]any {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := alice.call("tasks/get", id, `"taskId":"`+id+`"`)
			if st["status"] != not || time.Now().After(deadline) {
				return st
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for answer, title := range map[string]string{
		`{"action":"accept","content":{"title":"My\nexport"}}`:                       "# My export\n",
		`{"action":"accept","content":{"title":"` + strings.Repeat("é", 250) + `"}}`: "# " + strings.Repeat("é", 200) + "\n",
		`{"action":"decline"}`: "# Notes\n",
	} {
		id, _ := alice.call("tools/call", "notes_export", `"name":"notes_export","arguments":{"seconds":0,"askTitle":true}`)["taskId"].(string)
		st := wait(id, "working")
		reqs, _ := st["inputRequests"].(map[string]any)
		if st["status"] != "input_required" || reqs["title"] == nil {
			t.Fatalf("before the answer: %v", st)
		}
		if r := alice.call("tasks/update", id, `"taskId":"`+id+`","inputResponses":{"title":`+answer+`}`); r["error"] != nil {
			t.Fatalf("tasks/update: %v", r)
		}
		st = wait(id, "working")
		md, _ := structured(st["result"].(map[string]any))["markdown"].(string)
		if st["status"] != "completed" || !strings.HasPrefix(md, title) || !strings.Contains(md, "a note") {
			t.Errorf("answered %s: %v %q", answer, st["status"], md[:min(len(md), 80)])
		}
	}
	alice.caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	id, _ := alice.call("tools/call", "notes_export", `"name":"notes_export","arguments":{"seconds":0,"askTitle":true}`)["taskId"].(string)
	st := wait(id, "working")
	if e, _ := st["error"].(map[string]any); st["status"] != "failed" || e["code"] != float64(-32021) {
		t.Fatalf("without elicitation: %v", st)
	}
}
