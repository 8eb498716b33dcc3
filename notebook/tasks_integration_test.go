//go:build integration

package notebook

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/fntest"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

// taskPath is the function on the Lambda path with its task workers
// (rie.TaskPath): the real bootstrap under an emulator behind an API
// Gateway front, and the worker emulators its asynchronous invocations of
// itself reach through the Invoke API's stand-in; tasks in DynamoDB Local.
type taskPath struct {
	*rie.TaskPath
	invoke *rie.InvokeAPI
}

func newTaskPath(t *testing.T, duplicate bool, extraEnv ...string) *taskPath {
	t.Helper()
	db := localDynamoDB(t)
	env := append([]string{endpoint.EnvClaimsTable + "=" + notesTable, endpoint.EnvAllowAnonymous + "=true", endpoint.EnvLogLevel + "=error",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB=" + db.Endpoint,
		// A worker's invocation lasts 10 s: its lease, when it is killed.
		"AWS_LAMBDA_FUNCTION_TIMEOUT=10"}, extraEnv...)
	tp, err := rie.StartTaskPath(context.Background(), rie.TaskPathOptions{RIE: fntest.RIEBinary(t), Bootstrap: fntest.BuildBootstrap(t, "../functions/fixture", fntest.HostArch), Env: env, Duplicate: duplicate})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tp.Stop()
		if t.Failed() {
			front, worker := tp.Logs()
			t.Logf("front:\n%s\nworker:\n%s", tail(front), tail(worker))
		}
	})
	return &taskPath{TaskPath: tp, invoke: tp.Invoke}
}

func tail(s string) string { return s[max(0, len(s)-3000):] }

// rpc sends one 2026-07-28 request and returns its result or error (the
// front's calls are all the anonymous principal's: principal names the
// caller only for the reader).
func (p *taskPath) rpc(t *testing.T, principal, method, name, params string) (map[string]any, map[string]any) {
	t.Helper()
	res, e, err := p.Post(context.Background(), method, name, params)
	if err != nil {
		t.Fatal(err)
	}
	return res, e
}

const taskMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

func (p *taskPath) export(t *testing.T, principal string, seconds int) string {
	t.Helper()
	res, e := p.rpc(t, principal, "tools/call", "notes_export", fmt.Sprintf(`{"name":"notes_export","arguments":{"seconds":%d},"_meta":%s}`, seconds, taskMeta))
	id, _ := res["taskId"].(string)
	if e != nil || res["resultType"] != "task" || id == "" {
		t.Fatalf("export: %v %v", res, e)
	}
	return id
}

func (p *taskPath) get(t *testing.T, principal, id string) (map[string]any, map[string]any) {
	t.Helper()
	return p.rpc(t, principal, "tasks/get", id, `{"taskId":"`+id+`","_meta":`+taskMeta+`}`)
}

// poll polls the task as a client does, every 200 ms, until it ends.
func (p *taskPath) poll(t *testing.T, principal, id string, limit time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		res, e := p.get(t, principal, id)
		if e != nil {
			t.Fatalf("tasks/get: %v", e)
		}
		if s := res["status"]; s == "completed" || s == "failed" || s == "cancelled" {
			return res
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("task %s did not end within %v", id, limit)
	return nil
}

// record reads the task's item from the table.
func record(t *testing.T, id string) *tasks.Record {
	t.Helper()
	return recordIn(t, notesTable, id)
}

func recordIn(t *testing.T, table, id string) *tasks.Record {
	t.Helper()
	store := &tasks.DynamoDB{Client: localDynamoDB(t).Client(), Table: table, SortKey: "sk"}
	rec, err := store.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("task %s: %v", id, err)
	}
	return rec
}

// TestTaskThroughLambda: the demo's export, a task, runs on a worker
// invocation of the function and completes with the caller's notes; a
// client without the extension is refused -32021; another caller cannot
// see the task.
func TestTaskThroughLambda(t *testing.T) {
	p := newTaskPath(t, true)
	who := fmt.Sprint("export-", time.Now().UnixNano())
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	if _, e := p.rpc(t, who, "tools/call", "notes_add", `{"name":"notes_add","arguments":{"text":"first note"},"_meta":`+meta+`}`); e != nil {
		t.Fatal(e)
	}
	if _, e := p.rpc(t, who, "tools/call", "notes_export", `{"name":"notes_export","arguments":{},"_meta":`+meta+`}`); e == nil || e["code"] != float64(-32021) {
		t.Fatalf("export without the extension: %v", e)
	}
	id := p.export(t, who, 2)
	done := p.poll(t, who, id, 30*time.Second)
	res, _ := done["result"].(map[string]any)
	if done["status"] != "completed" || !strings.Contains(fmt.Sprint(res["structuredContent"]), "first note") {
		t.Fatalf("ended %v", done)
	}
	// Every worker event was delivered twice (Duplicate): the second did
	// nothing, the task ran once.
	p.invoke.Wait()
	if rec := record(t, id); rec.Attempts != 1 {
		t.Fatalf("the task ran %d times", rec.Attempts)
	}
	if runs, failed := p.invoke.Delivered(); runs != 2 || failed != 0 {
		t.Fatalf("%d worker invocations, %d failed; want 2 and 0", runs, failed)
	}
}

// TestTaskWorkerKilled: a worker killed mid-task holds its task until its
// lease (the invocation's 10 s) lapses; then tasks/get dispatches it
// again and it completes, having run twice.
func TestTaskWorkerKilled(t *testing.T) {
	p := newTaskPath(t, false)
	who := fmt.Sprint("killed-", time.Now().UnixNano())
	id := p.export(t, who, 4)
	deadline := time.Now().Add(10 * time.Second)
	for record(t, id).Owner == "" {
		if time.Now().After(deadline) {
			t.Fatal("no worker took the task")
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Worker().Kill()
	killed := time.Now()
	done := p.poll(t, who, id, 45*time.Second)
	if done["status"] != "completed" {
		t.Fatalf("ended %v", done)
	}
	if rec := record(t, id); rec.Attempts != 2 {
		t.Fatalf("%d runs, want 2", rec.Attempts)
	}
	if took := time.Since(killed); took < 8*time.Second {
		t.Fatalf("completed %v after the kill: before the dead worker's lease lapsed", took)
	}
}

// TestTaskCancelThroughLambda: a cancellation racing the export's end
// leaves one terminal state, which stays; a cancelled export stops.
func TestTaskCancelThroughLambda(t *testing.T) {
	p := newTaskPath(t, false)
	who := fmt.Sprint("cancel-", time.Now().UnixNano())
	for i := range 4 {
		id := p.export(t, who, 1)
		time.Sleep(time.Duration(700+150*i) * time.Millisecond)
		if res, e := p.rpc(t, who, "tasks/cancel", id, `{"taskId":"`+id+`","_meta":`+taskMeta+`}`); e != nil || res["resultType"] != "complete" {
			t.Fatalf("cancel: %v %v", res, e)
		}
		first := p.poll(t, who, id, 20*time.Second)
		if s := first["status"]; s != "completed" && s != "cancelled" {
			t.Fatalf("ended %v", first)
		}
		time.Sleep(1500 * time.Millisecond)
		if again, _ := p.get(t, who, id); again["status"] != first["status"] || again["lastUpdatedAt"] != first["lastUpdatedAt"] {
			t.Fatalf("terminal state changed: %v then %v", first, again)
		}
		t.Logf("race %d: %v", i, first["status"])
	}
	id := p.export(t, who, 60)
	time.Sleep(time.Second)
	p.rpc(t, who, "tasks/cancel", id, `{"taskId":"`+id+`","_meta":`+taskMeta+`}`)
	start := time.Now()
	p.invoke.Wait()
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the cancelled export's worker ran on for %v", took)
	}
}

// TestTaskExpires: past its TTL a task answers as an unknown one.
func TestTaskExpires(t *testing.T) {
	p := newTaskPath(t, false, endpoint.EnvTaskTTL+"=3s")
	who := fmt.Sprint("expiry-", time.Now().UnixNano())
	id := p.export(t, who, 0)
	if res, _ := p.get(t, who, id); res["ttlMs"] != float64(3000) {
		t.Fatalf("ttlMs %v", res["ttlMs"])
	}
	time.Sleep(3200 * time.Millisecond)
	if _, e := p.get(t, who, id); e == nil || e["code"] != float64(-32602) {
		t.Fatalf("expired task: %v", e)
	}
}

// TestTaskSizesThroughLambda: on the Lambda path with worker invocations
// and DynamoDB, the demo's export of ten notes of 4,000 "<", "&" and
// U+2028 (the 80 KB that could not be stored, and ran three
// times) completes with every note in its result after one run of its
// handler; thirty such notes (a result over 320 KiB as encoded) fail the
// task once, saying why, and the handler is not run again; a call with
// 500 KB of capabilities is refused -32602, not retryable, and starts no
// worker.
func TestTaskSizesThroughLambda(t *testing.T) {
	// A table of its own: every test's calls are the same anonymous
	// principal's, and these notes would make other tests' exports large.
	const table = "task-sizes-test"
	if err := dynamolocal.CreateTable(context.Background(), localDynamoDB(t).Client(), table); err != nil {
		t.Fatal(err)
	}
	p := newTaskPath(t, false, endpoint.EnvClaimsTable+"="+table)
	who := fmt.Sprint("sizes-", time.Now().UnixNano())
	meta := `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	text := strings.Repeat("<", 2000) + strings.Repeat("&", 1000) + strings.Repeat("\u2028", 1000)
	notes := dynamoNotes(localDynamoDB(t).Client(), table, 0)
	added := 0
	for _, n := range []int{10, 30} {
		for ; added < n; added++ {
			if _, e := p.rpc(t, who, "tools/call", "notes_add", `{"name":"notes_add","arguments":{"text":"`+text+`"},"_meta":`+meta+`}`); e != nil {
				t.Fatal(e)
			}
		}
		id := p.export(t, who, 0)
		done := p.poll(t, who, id, 60*time.Second)
		p.invoke.Wait()
		runs, err := notes.exportRuns(context.Background(), recordIn(t, table, id).Principal, id)
		if err != nil || runs != 1 || recordIn(t, table, id).Attempts != 1 {
			t.Fatalf("%d notes: %d completed runs (%v), %d attempts; want 1", n, runs, err, recordIn(t, table, id).Attempts)
		}
		if n == 10 {
			res, _ := done["result"].(map[string]any)
			sc, _ := res["structuredContent"].(map[string]any)
			md, _ := sc["markdown"].(string)
			if done["status"] != "completed" || strings.Count(md, text) != n {
				t.Fatalf("%d notes: ended %v, %d notes whole in the export", n, done["status"], strings.Count(md, text))
			}
			t.Logf("%d notes: completed, an export of %d bytes of Markdown", n, len(md))
			continue
		}
		e, _ := done["error"].(map[string]any)
		data, _ := e["data"].(map[string]any)
		if done["status"] != "failed" || data["reason"] != "task_result_too_large" {
			t.Fatalf("%d notes: ended %v", n, done)
		}
		if again, _ := p.get(t, who, id); again["status"] != "failed" || again["lastUpdatedAt"] != done["lastUpdatedAt"] {
			t.Fatalf("%d notes: the failed task changed: %v", n, again)
		}
	}
	before, _ := p.invoke.Delivered()
	caps := `{"extensions":{"io.modelcontextprotocol/tasks":{},"x":{"pad":"` + strings.Repeat("<", 500<<10) + `"}}}`
	_, e := p.rpc(t, who, "tools/call", "notes_export", `{"name":"notes_export","arguments":{"seconds":0},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+caps+`}}`)
	data, _ := e["data"].(map[string]any)
	if e == nil || e["code"] != float64(-32602) || data["retryable"] == true || data["reason"] != "task_call_too_large" {
		t.Fatalf("500 KB of capabilities: %v", e)
	}
	if after, _ := p.invoke.Delivered(); after != before {
		t.Fatal("a refused call started a worker")
	}
}

// TestKeyedTaskThroughLambda: nine calls of the read-only notes_export
// with one idempotency key, sent at once, are one task: each answer,
// after retries of an in-progress refusal, names it, and one worker ran.
func TestKeyedTaskThroughLambda(t *testing.T) {
	p := newTaskPath(t, false)
	who := fmt.Sprint("keyed-", time.Now().UnixNano())
	key := fmt.Sprint("k-", time.Now().UnixNano())
	ids := make([]string, 9)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				res, e := p.rpc(t, who, "tools/call", "notes_export", `{"name":"notes_export","arguments":{"seconds":1},"idempotencyKey":"`+key+`","_meta":`+taskMeta+`}`)
				if e == nil {
					ids[i], _ = res["taskId"].(string)
					return
				}
				if data, _ := e["data"].(map[string]any); data["retryable"] != true {
					t.Errorf("call %d: %v", i, e)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("call %d named task %q, call 0 %q", i, id, ids[0])
		}
	}
	if done := p.poll(t, who, ids[0], 30*time.Second); done["status"] != "completed" {
		t.Fatalf("ended %v", done)
	}
	p.invoke.Wait()
	if runs, failed := p.invoke.Delivered(); runs != 1 || failed != 0 {
		t.Fatalf("%d worker invocations, %d failed; want 1", runs, failed)
	}
}
