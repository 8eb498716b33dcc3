package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

const tasksCaps = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// taskRig is a server with task tools whose workers the test runs itself:
// dispatched ids queue up in dispatched.
type taskRig struct {
	srv        *stateless.Server
	ext        *tasks.Extension
	store      tasks.Store
	dispatched chan string
	dispatchOK atomic.Bool
	runs       atomic.Int32
	release    chan struct{} // "block" waits on it
	inRun      chan struct{} // "block" signals it runs
}

func newTaskRig(t *testing.T, store tasks.Store, mod func(*stateless.Options, *tasks.Options)) *taskRig {
	t.Helper()
	r := &taskRig{store: store, dispatched: make(chan string, 64), release: make(chan struct{}), inRun: make(chan struct{}, 64)}
	r.dispatchOK.Store(true)
	to := &tasks.Options{Store: store, CancelCheck: 10 * time.Millisecond,
		Dispatch: func(ctx context.Context, id string) error {
			if !r.dispatchOK.Load() {
				return errors.New("no worker")
			}
			r.dispatched <- id
			return nil
		}}
	opts := &stateless.Options{SchemaEngine: toolschema.Engine{}}
	if mod != nil {
		mod(opts, to)
	}
	r.ext = tasks.New(*to)
	r.srv = stateless.NewServer(stateless.Implementation{Name: "tasks", Version: "1"}, opts)
	r.ext.Install(r.srv)
	stateless.AddTool(r.srv, &stateless.Tool{Name: "quick", TaskSupport: stateless.TaskSupportOptional},
		func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, echoOut, error) {
			r.runs.Add(1)
			if req.Task == nil {
				return nil, echoOut{Text: "sync " + in.Text}, nil
			}
			return nil, echoOut{Text: "task " + in.Text}, nil
		})
	stateless.AddTool(r.srv, &stateless.Tool{Name: "block", TaskSupport: stateless.TaskSupportRequired},
		func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, any, error) {
			r.runs.Add(1)
			r.inRun <- struct{}{}
			select {
			case <-r.release:
				return text("released"), nil, nil
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
		})
	stateless.AddTool(r.srv, &stateless.Tool{Name: "ask", TaskSupport: stateless.TaskSupportRequired},
		func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, any, error) {
			r.runs.Add(1)
			a, okA := req.ElicitResult("a")
			b, okB := req.ElicitResult("b")
			switch {
			case !okA && !okB:
				return nil, nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"a": nameElicit(), "b": nameElicit()}, State: []byte("one")}
			case in.Text == "reuse":
				return nil, nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"a": nameElicit()}}
			case in.Text == "more":
				if _, ok := req.ElicitResult("c"); !ok {
					return nil, nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"c": nameElicit()}, State: []byte("two")}
				}
			}
			st, _ := req.State()
			return text(fmt.Sprintf("%v %v %s", a.Content["name"], b.Content["name"], st)), nil, nil
		})
	return r
}

func nameElicit() stateless.InputRequest {
	return stateless.ElicitForm("Name?", map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}})
}

func text(s string) *stateless.CallToolResult {
	return &stateless.CallToolResult{Content: []stateless.Content{stateless.Text(s)}}
}

// do sends one request of principal; name is the Mcp-Name header.
func (r *taskRig) do(t *testing.T, principal, method, name, params string) (*stateless.Response, *wire.RPC) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	resp := r.srv.Handle(context.Background(), &stateless.Request{Method: http.MethodPost, Header: wire.ModernHeaders(method, name), Body: []byte(body), Host: "api.example.com", Principal: principal})
	return resp, wire.DecodeRPC(t, resp.Body)
}

func (r *taskRig) callTool(t *testing.T, principal, tool, args, caps string) *wire.RPC {
	t.Helper()
	_, out := r.do(t, principal, "tools/call", tool, `{"name":"`+tool+`","arguments":`+args+`,"_meta":`+wire.MetaJSON(caps)+`}`)
	return out
}

func (r *taskRig) task(t *testing.T, principal, method, id, extra string) (*stateless.Response, *wire.RPC) {
	t.Helper()
	return r.do(t, principal, method, id, `{"taskId":`+quote(id)+extra+`,"_meta":`+wire.MetaJSON(tasksCaps)+`}`)
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// create calls tool as a task and returns its id, checking the
// CreateTaskResult's shape.
func (r *taskRig) create(t *testing.T, principal, tool, args string) string {
	t.Helper()
	out := r.callTool(t, principal, tool, args, tasksCaps)
	if out.Error != nil || out.Result["resultType"] != "task" {
		t.Fatalf("no task: %+v %+v", out.Result, out.Error)
	}
	for _, k := range []string{"taskId", "status", "createdAt", "lastUpdatedAt", "ttlMs", "pollIntervalMs"} {
		if _, ok := out.Result[k]; !ok {
			t.Errorf("CreateTaskResult lacks %s: %v", k, out.Result)
		}
	}
	for _, k := range []string{"result", "error", "inputRequests", "requestState", "task"} {
		if _, ok := out.Result[k]; ok {
			t.Errorf("CreateTaskResult has %s: %v", k, out.Result)
		}
	}
	id, _ := out.Result["taskId"].(string)
	if len(id) < 32 {
		t.Fatalf("task id %q: fewer than 128 bits", id)
	}
	return id
}

func (r *taskRig) status(t *testing.T, principal, id string) map[string]any {
	t.Helper()
	_, out := r.task(t, principal, "tasks/get", id, "")
	if out.Error != nil {
		t.Fatalf("tasks/get: %+v", out.Error)
	}
	return out.Result
}

// work runs the next dispatched task's worker.
func (r *taskRig) work(t *testing.T) error {
	t.Helper()
	select {
	case id := <-r.dispatched:
		return r.ext.Run(context.Background(), id)
	case <-time.After(5 * time.Second):
		t.Fatal("nothing dispatched")
	}
	return nil
}

func TestTaskLifecycle(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), nil)
	// Without the extension, an optional task tool answers in its request.
	if out := r.callTool(t, "alice", "quick", `{"text":"x"}`, `{}`); out.Result["resultType"] != "complete" || !strings.Contains(fmt.Sprint(out.Result["content"]), "sync x") {
		t.Fatalf("sync: %+v %+v", out.Result, out.Error)
	}
	id := r.create(t, "alice", "quick", `{"text":"x"}`)
	// Durable before the answer: found at once, working, no outcome yet.
	if st := r.status(t, "alice", id); st["status"] != "working" || st["result"] != nil || st["resultType"] != "complete" {
		t.Fatalf("at once: %v", st)
	}
	if err := r.work(t); err != nil {
		t.Fatal(err)
	}
	st := r.status(t, "alice", id)
	res, _ := st["result"].(map[string]any)
	if st["status"] != "completed" || res == nil || !strings.Contains(fmt.Sprint(res["content"]), "task x") {
		t.Fatalf("completed: %v", st)
	}
	// A second delivery of the same worker event runs nothing.
	if err := r.ext.Run(context.Background(), id); err != nil || r.runs.Load() != 2 {
		t.Fatalf("duplicate delivery: %v, %d runs", err, r.runs.Load())
	}
	// Cancelling an ended task acknowledges and keeps its outcome.
	if _, out := r.task(t, "alice", "tasks/cancel", id, ""); out.Error != nil || len(out.Result) != 2 || out.Result["resultType"] != "complete" {
		t.Fatalf("cancel: %+v %+v", out.Result, out.Error)
	}
	if st := r.status(t, "alice", id); st["status"] != "completed" {
		t.Fatalf("after cancel: %v", st)
	}
}

// TestTaskOfAnotherPrincipal: another caller's task answers every tasks/*
// method exactly as a task that does not exist.
func TestTaskOfAnotherPrincipal(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), nil)
	id := r.create(t, "alice", "quick", `{"text":"x"}`)
	other := strings.Repeat("A", len(id))
	for _, m := range []string{"tasks/get", "tasks/cancel", "tasks/update"} {
		extra := ""
		if m == "tasks/update" {
			extra = `,"inputResponses":{}`
		}
		bob, out := r.task(t, "bob", m, id, extra)
		none, _ := r.task(t, "alice", m, other, extra)
		if out.Error == nil || out.Error.Code != -32602 || bob.Status != none.Status || string(bob.Body) != string(none.Body) {
			t.Errorf("%s: bob gets %d %s; unknown is %d %s", m, bob.Status, bob.Body, none.Status, none.Body)
		}
	}
	if st := r.status(t, "alice", id); st["status"] != "working" {
		t.Fatalf("bob's cancel reached alice's task: %v", st)
	}
}

func TestTaskNeedsExtension(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), nil)
	out := r.callTool(t, "alice", "block", `{"text":"x"}`, `{}`)
	if out.Error == nil || out.Error.Code != -32021 || !strings.Contains(string(out.Error.Data), `"extensions":{"io.modelcontextprotocol/tasks":{}}`) || r.runs.Load() != 0 {
		t.Fatalf("required task tool without the extension: %+v, %d runs", out.Error, r.runs.Load())
	}
	_, out = r.do(t, "alice", "tasks/get", "t1", `{"taskId":"t1","_meta":`+wire.MetaJSON(`{}`)+`}`)
	if out.Error == nil || out.Error.Code != -32021 {
		t.Fatalf("tasks/get without the extension: %+v", out.Error)
	}
	// A server without tasks has no tasks/* methods.
	plain := stateless.NewServer(stateless.Implementation{Name: "plain", Version: "1"}, nil)
	resp := wire.Call(t, plain, http.MethodPost, wire.ModernHeaders("tasks/get", "t1"), `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"t1","_meta":`+wire.MetaJSON(tasksCaps)+`}}`)
	if e := wire.DecodeRPC(t, resp.Body).Error; e == nil || e.Code != -32601 {
		t.Fatalf("tasks/get on a server without tasks: %s", resp.Body)
	}
	// Unknown ids (of this server's shape or not: the store is not asked
	// about the second), removed methods, and Mcp-Name that is not the
	// task id.
	for _, id := range []string{"no-such-task", strings.Repeat("x", 129), "a b", "\u00e9"} {
		if _, out := r.task(t, "alice", "tasks/get", id, ""); out.Error == nil || out.Error.Code != -32602 || !strings.Contains(string(out.Error.Data), "unknown_task") {
			t.Fatalf("unknown id %q: %+v", id, out.Error)
		}
	}
	_, out = r.do(t, "alice", "tasks/list", "", `{"_meta":`+wire.MetaJSON(tasksCaps)+`}`)
	if out.Error == nil || out.Error.Code != -32601 {
		t.Fatalf("tasks/list: %+v", out.Error)
	}
	id := r.create(t, "alice", "quick", `{"text":"x"}`)
	resp, out = r.do(t, "alice", "tasks/get", "another", `{"taskId":`+quote(id)+`,"_meta":`+wire.MetaJSON(tasksCaps)+`}`)
	if resp.Status != 400 || out.Error == nil || out.Error.Code != -32020 {
		t.Fatalf("Mcp-Name mismatch: %d %+v", resp.Status, out.Error)
	}
}

// TestTaskCancel: a running handler's context is cancelled, and the task
// ends cancelled, not failed.
func TestTaskCancel(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), nil)
	id := r.create(t, "alice", "block", `{"text":"x"}`)
	done := make(chan error, 1)
	go func() { done <- r.work(t) }()
	<-r.inRun
	if _, out := r.task(t, "alice", "tasks/cancel", id, ""); out.Error != nil {
		t.Fatal(out.Error)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the worker did not stop")
	}
	if st := r.status(t, "alice", id); st["status"] != "cancelled" || st["result"] != nil || st["error"] != nil {
		t.Fatalf("after cancel: %v", st)
	}
}

// TestTaskCancelRacesCompletion: a cancellation racing the handler's
// return ends in one terminal state, which stays.
func TestTaskCancelRacesCompletion(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), nil)
	seen := map[string]int{}
	for range 40 {
		id := r.create(t, "alice", "block", `{"text":"x"}`)
		done := make(chan error, 1)
		go func() { done <- r.work(t) }()
		<-r.inRun
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); r.release <- struct{}{} }()
		go func() { defer wg.Done(); r.task(t, "alice", "tasks/cancel", id, "") }()
		wg.Wait()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		first := r.status(t, "alice", id)
		st := first["status"].(string)
		seen[st]++
		if st != "completed" && st != "cancelled" || (st == "completed") != (first["result"] != nil) {
			t.Fatalf("ended %v", first)
		}
		if again := r.status(t, "alice", id); again["status"] != st || again["lastUpdatedAt"] != first["lastUpdatedAt"] {
			t.Fatalf("terminal state changed: %v then %v", first, again)
		}
	}
	t.Logf("terminal states: %v", seen)
}

// TestTaskRedrive: a task whose worker died (its lease lapsed) is
// dispatched again by tasks/get, and failed once its runs are used up.
func TestTaskRedrive(t *testing.T) {
	store := tasks.NewMemory()
	r := newTaskRig(t, store, func(_ *stateless.Options, to *tasks.Options) { to.MaxAttempts = 2 })
	id := r.create(t, "alice", "quick", `{"text":"x"}`)
	<-r.dispatched // the event is lost
	hold := func(lease time.Duration) {
		t.Helper()
		rec, err := store.Load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		prev := rec.Version
		rec.Version++
		rec.Owner, rec.LeaseUntil, rec.Attempts = "a-worker", time.Now().Add(lease), rec.Attempts+1
		if err := store.Replace(context.Background(), rec, prev); err != nil {
			t.Fatal(err)
		}
	}
	// A worker holding a live lease is left alone.
	hold(time.Minute)
	if st := r.status(t, "alice", id); st["status"] != "working" || len(r.dispatched) != 0 {
		t.Fatalf("live lease: %v, %d dispatched", st, len(r.dispatched))
	}
	if err := r.ext.Run(context.Background(), id); err != nil || r.runs.Load() != 0 {
		t.Fatalf("a second worker beside a live lease: %v, %d runs", err, r.runs.Load())
	}
	// It dies: its lease lapses.
	rec, _ := store.Load(context.Background(), id)
	prev := rec.Version
	rec.Version++
	// Within the lease's skew it is still left alone: a write its worker
	// sent in time may still land.
	rec.LeaseUntil = time.Now().Add(-time.Millisecond)
	if err := store.Replace(context.Background(), rec, prev); err != nil {
		t.Fatal(err)
	}
	if st := r.status(t, "alice", id); st["status"] != "working" || len(r.dispatched) != 0 {
		t.Fatalf("within the skew: %v, %d dispatched", st, len(r.dispatched))
	}
	rec, _ = store.Load(context.Background(), id)
	prev = rec.Version
	rec.Version++
	rec.LeaseUntil = time.Now().Add(-3 * time.Second)
	if err := store.Replace(context.Background(), rec, prev); err != nil {
		t.Fatal(err)
	}
	if st := r.status(t, "alice", id); st["status"] != "working" {
		t.Fatalf("after a dead worker: %v", st)
	}
	select {
	case <-r.dispatched:
	default:
		t.Fatal("tasks/get did not dispatch the task again")
	}
	// The next worker dies too: the task has used its two runs.
	hold(-3 * time.Second)
	rec, _ = store.Load(context.Background(), id)
	if rec.Attempts != 2 {
		t.Fatalf("attempts %d", rec.Attempts)
	}
	st := r.status(t, "alice", id)
	if st["status"] != "failed" || st["error"] == nil || st["result"] != nil {
		t.Fatalf("runs used up: %v", st)
	}
	if r.runs.Load() != 0 {
		t.Fatalf("the tool ran %d times", r.runs.Load())
	}
}

// TestTaskInput: input requests during a task, answered with tasks/update
// partially, with unknown keys, then fully; a handler that reuses a key
// fails its task.
func TestTaskInput(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), nil)
	for _, c := range []struct{ arg, want, status string }{
		{"plain", "Ann Bo one", "completed"},
		{"more", "Ann Bo two", "completed"},
		{"reuse", "", "failed"},
	} {
		t.Run(c.arg, func(t *testing.T) {
			id := r.create(t, "alice", "ask", `{"text":"`+c.arg+`"}`)
			if err := r.work(t); err != nil {
				t.Fatal(err)
			}
			st := r.status(t, "alice", id)
			reqs, _ := st["inputRequests"].(map[string]any)
			if st["status"] != "input_required" || len(reqs) != 2 || reqs["a"] == nil || reqs["b"] == nil {
				t.Fatalf("first round: %v", st)
			}
			answer := func(k, v string) string { return `"` + k + `":{"action":"accept","content":{"name":"` + v + `"}}` }
			for _, upd := range []string{`{` + answer("a", "Ann") + `,` + answer("zz", "ignored") + `}`, `{` + answer("a", "Other") + `}`} {
				if _, out := r.task(t, "alice", "tasks/update", id, `,"inputResponses":`+upd); out.Error != nil || len(out.Result) != 2 {
					t.Fatalf("update: %+v %+v", out.Result, out.Error)
				}
			}
			st = r.status(t, "alice", id)
			if reqs, _ := st["inputRequests"].(map[string]any); st["status"] != "input_required" || len(reqs) != 1 || reqs["b"] == nil {
				t.Fatalf("after a partial answer: %v", st)
			}
			select {
			case <-r.dispatched:
				t.Fatal("dispatched with an answer outstanding")
			default:
			}
			r.task(t, "alice", "tasks/update", id, `,"inputResponses":{`+answer("b", "Bo")+`}`)
			if err := r.work(t); err != nil {
				t.Fatal(err)
			}
			if c.arg == "more" {
				if st := r.status(t, "alice", id); st["status"] != "input_required" {
					t.Fatalf("second round: %v", st)
				}
				r.task(t, "alice", "tasks/update", id, `,"inputResponses":{`+answer("c", "Cy")+`}`)
				if err := r.work(t); err != nil {
					t.Fatal(err)
				}
			}
			st = r.status(t, "alice", id)
			if st["status"] != c.status {
				t.Fatalf("ended %v", st)
			}
			if c.want != "" && !strings.Contains(fmt.Sprint(st["result"]), c.want) {
				t.Fatalf("result %v, want %q", st["result"], c.want)
			}
		})
	}
	// Answers beyond what a task may keep are refused, and change nothing.
	id := r.create(t, "alice", "ask", `{"text":"plain"}`)
	if err := r.work(t); err != nil {
		t.Fatal(err)
	}
	big := `{"a":{"action":"accept","content":{"name":"` + strings.Repeat("x", 130<<10) + `"}}}`
	if _, out := r.task(t, "alice", "tasks/update", id, `,"inputResponses":`+big); out.Error == nil || out.Error.Code != -32602 {
		t.Fatalf("oversized answers: %+v", out.Error)
	}
	if st := r.status(t, "alice", id); len(st["inputRequests"].(map[string]any)) != 2 {
		t.Fatalf("after oversized answers: %v", st)
	}
	_, out := r.task(t, "alice", "tasks/update", "x", `,"inputResponses":[1]`)
	if out.Error == nil || out.Error.Code != -32602 {
		t.Fatalf("malformed inputResponses: %+v", out.Error)
	}
}

func TestTaskExpiry(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), func(_ *stateless.Options, to *tasks.Options) { to.TTL = 300 * time.Millisecond })
	id := r.create(t, "alice", "quick", `{"text":"x"}`)
	if st := r.status(t, "alice", id); st["ttlMs"] != float64(300) {
		t.Fatalf("ttlMs %v", st["ttlMs"])
	}
	time.Sleep(350 * time.Millisecond)
	if _, out := r.task(t, "alice", "tasks/get", id, ""); out.Error == nil || out.Error.Code != -32602 {
		t.Fatalf("expired: %+v", out.Error)
	}
	if err := r.work(t); err != nil {
		t.Fatalf("worker of an expired task: %v", err)
	}
	if r.runs.Load() != 0 {
		t.Fatal("an expired task ran")
	}
}

// TestTaskKeyed: a keyed tools/call that created a task replays the same
// task on a retry; one task, one worker.
func TestTaskKeyed(t *testing.T) {
	g := claims.New(claims.NewMemory(), nil)
	r := newTaskRig(t, tasks.NewMemory(), func(o *stateless.Options, _ *tasks.Options) {
		o.Interceptors = append([]stateless.Interceptor{g.Interceptor()}, o.Interceptors...)
	})
	args := `{"name":"quick","arguments":{"text":"k"},"idempotencyKey":"key-1","_meta":` + wire.MetaJSON(tasksCaps) + `}`
	_, first := r.do(t, "alice", "tools/call", "quick", args)
	_, second := r.do(t, "alice", "tools/call", "quick", args)
	if first.Error != nil || second.Error != nil || first.Result["taskId"] == nil || first.Result["taskId"] != second.Result["taskId"] {
		t.Fatalf("first %v, second %v", first.Result, second.Result)
	}
	if len(r.dispatched) != 1 {
		t.Fatalf("%d dispatches", len(r.dispatched))
	}
}

// failingStore fails every call.
type failingStore struct{}

func (failingStore) Create(context.Context, *tasks.Record) error { return errors.New("down") }
func (failingStore) Load(context.Context, string) (*tasks.Record, error) {
	return nil, errors.New("down")
}
func (failingStore) Replace(context.Context, *tasks.Record, int64) error {
	return errors.New("down")
}

// TestTaskFailsClosed: a store that is down, or no worker to be had, is a
// retryable refusal; a task no worker took is failed, not left working.
func TestTaskFailsClosed(t *testing.T) {
	r := newTaskRig(t, failingStore{}, nil)
	out := r.callTool(t, "alice", "quick", `{"text":"x"}`, tasksCaps)
	if out.Error == nil || out.Error.Code != -32603 || !strings.Contains(string(out.Error.Data), `"retryable":true`) || len(r.dispatched) != 0 {
		t.Fatalf("store down: %+v", out.Error)
	}
	if _, out := r.task(t, "alice", "tasks/get", "x", ""); out.Error == nil || !strings.Contains(string(out.Error.Data), `"retryable":true`) {
		t.Fatalf("tasks/get, store down: %+v", out.Error)
	}
	store := tasks.NewMemory()
	r = newTaskRig(t, store, nil)
	r.dispatchOK.Store(false)
	out = r.callTool(t, "alice", "quick", `{"text":"x"}`, tasksCaps)
	if out.Error == nil || !strings.Contains(string(out.Error.Data), `"retryable":true`) {
		t.Fatalf("no worker: %+v", out.Error)
	}
}

// TestTimeoutSaysRunAsTask: a task tool called in its request (the
// client did not declare the extension) that outlasts it is refused with
// a retryable timeout naming the extension; a tool that cannot run as a
// task says only that it needed longer.
func TestTimeoutSaysRunAsTask(t *testing.T) {
	ext := tasks.New(tasks.Options{Store: tasks.NewMemory()})
	srv := stateless.NewServer(stateless.Implementation{Name: "slow", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
	ext.Install(srv)
	slow := func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, any, error) {
		<-ctx.Done()
		return nil, nil, ctx.Err()
	}
	stateless.AddTool(srv, &stateless.Tool{Name: "optional", TaskSupport: stateless.TaskSupportOptional, MaxDuration: 50 * time.Millisecond}, slow)
	stateless.AddTool(srv, &stateless.Tool{Name: "plain", MaxDuration: 50 * time.Millisecond}, slow)
	for tool, want := range map[string]string{
		"optional": `"longerThanRequest":true,"retryable":true,"runAsTask":"io.modelcontextprotocol/tasks","type":"timeout"`,
		"plain":    `"longerThanRequest":true,"retryable":true,"type":"timeout"`,
	} {
		resp := wire.Call(t, srv, http.MethodPost, wire.ModernHeaders("tools/call", tool),
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"text":"x"},"_meta":`+wire.MetaJSON(`{}`)+`}}`)
		if e := wire.DecodeRPC(t, resp.Body).Error; e == nil || !strings.Contains(string(e.Data), want) {
			t.Errorf("%s: %s", tool, resp.Body)
		}
	}
}

// TestTaskSizeLimits: a call too large to keep as a task is refused
// before anything is stored; a result too large to keep fails its task.
func TestTaskSizeLimits(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), nil)
	stateless.AddTool(r.srv, &stateless.Tool{Name: "big", TaskSupport: stateless.TaskSupportRequired},
		func(ctx context.Context, req *stateless.ToolRequest, in echoIn) (*stateless.CallToolResult, any, error) {
			return text(strings.Repeat("y", 330<<10)), nil, nil
		})
	out := r.callTool(t, "alice", "quick", `{"text":"`+strings.Repeat("x", 70<<10)+`"}`, tasksCaps)
	if out.Error == nil || out.Error.Code != -32602 || len(r.dispatched) != 0 {
		t.Fatalf("a call too large: %+v", out.Error)
	}
	id := r.create(t, "alice", "big", `{"text":"x"}`)
	if err := r.work(t); err != nil {
		t.Fatal(err)
	}
	if st := r.status(t, "alice", id); st["status"] != "failed" || st["result"] != nil {
		t.Fatalf("a result too large: %v", st["status"])
	}
}
