package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

// flakyStore fails the writes that record a run's outcome (a Replace of
// a working task owned by a worker into anything else) as fail says.
type flakyStore struct {
	tasks.Store
	mu       sync.Mutex
	fail     func(n int) error // the n-th outcome write's error, from 1
	outcomes int
}

func (s *flakyStore) Replace(ctx context.Context, rec *tasks.Record, prev int64) error {
	if old, err := s.Store.Load(ctx, rec.ID); err == nil && old.Owner != "" && old.Status == tasks.StatusWorking && rec.Owner == "" {
		s.mu.Lock()
		s.outcomes++
		err := s.fail(s.outcomes)
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return s.Store.Replace(ctx, rec, prev)
}

// TestOutcomeWriteIsRetried: a store that fails the outcome's write a few
// times does not make the handler run again: the worker retries within
// its lease, and the task completes after one run.
func TestOutcomeWriteIsRetried(t *testing.T) {
	store := &flakyStore{Store: tasks.NewMemory(), fail: func(n int) error {
		if n <= 3 {
			return errors.New("connection reset")
		}
		return nil
	}}
	var outcomes []*stateless.Outcome
	var mu sync.Mutex
	r := newTaskRig(t, store, func(o *stateless.Options, _ *tasks.Options) {
		o.Observe = func(ctx context.Context, oc *stateless.Outcome) {
			mu.Lock()
			outcomes = append(outcomes, oc)
			mu.Unlock()
		}
	})
	id := r.create(t, "alice", "quick", `{"text":"x"}`)
	if err := r.work(t); err != nil {
		t.Fatalf("the worker: %v", err)
	}
	if st := r.status(t, "alice", id); st["status"] != "completed" || r.runs.Load() != 1 || store.outcomes != 4 {
		t.Fatalf("%v after %d runs and %d outcome writes; want completed, 1, 4", st["status"], r.runs.Load(), store.outcomes)
	}
	mu.Lock()
	defer mu.Unlock()
	var run *stateless.Outcome
	for _, o := range outcomes {
		if o.TaskRun {
			run = o
		}
	}
	if run == nil || run.Method != stateless.MethodTaskRun || run.Target != "quick" || run.Fault || run.Kind != "" {
		t.Fatalf("the run's outcome: %+v", run)
	}
}

// TestOutcomeThatCannotBeStored: an outcome the store refuses for its
// size fails the task at once, saying so, and the handler never runs
// again; an outcome that cannot be written before the worker's lease
// ends is given up as a fault that says so, and the task is re-driven.
func TestOutcomeThatCannotBeStored(t *testing.T) {
	store := &flakyStore{Store: tasks.NewMemory(), fail: func(n int) error {
		if n == 1 {
			return fmt.Errorf("item too big: %w", tasks.ErrTooLarge)
		}
		return nil
	}}
	r := newTaskRig(t, store, nil)
	id := r.create(t, "alice", "quick", `{"text":"x"}`)
	if err := r.work(t); err != nil {
		t.Fatalf("the worker: %v", err)
	}
	st := r.status(t, "alice", id)
	if st["status"] != "failed" || !strings.Contains(fmt.Sprint(st["error"]), "task_result_too_large") || r.runs.Load() != 1 {
		t.Fatalf("%v (%v) after %d runs", st["status"], st["error"], r.runs.Load())
	}
	if len(r.dispatched) != 0 {
		t.Fatal("dispatched again")
	}

	// A store down for the whole lease: the run's outcome is lost, and
	// its Outcome says so.
	down := &flakyStore{Store: tasks.NewMemory(), fail: func(int) error { return errors.New("unreachable") }}
	var run atomic.Pointer[stateless.Outcome]
	r = newTaskRig(t, down, func(o *stateless.Options, _ *tasks.Options) {
		o.DeadlineMargin = 100 * time.Millisecond
		o.Observe = func(ctx context.Context, oc *stateless.Outcome) {
			if oc.TaskRun {
				run.Store(oc)
			}
		}
	})
	r.create(t, "alice", "quick", `{"text":"x"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	err := r.ext.Run(ctx, <-r.dispatched)
	o := run.Load()
	if err == nil || o == nil || !o.Fault || o.Kind != "task_outcome_lost" || o.Target != "quick" || down.outcomes < 2 {
		t.Fatalf("a store down: %v, %+v, %d writes", err, o, down.outcomes)
	}
}

// TestOutcomeAfterRedrive: a re-drive that let a lapsed worker's task go,
// with no other worker taking it yet, does not discard that worker's
// outcome: the task completes after one run, and the worker dispatched
// again finds it ended and runs nothing.
func TestOutcomeAfterRedrive(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), nil)
	id := r.create(t, "alice", "block", `{"text":"x"}`)
	done := make(chan error, 1)
	go func() { done <- r.ext.Run(context.Background(), <-r.dispatched) }()
	<-r.inRun
	// The worker's lease lapses, skew included, while it runs, and a
	// tasks/get lets the task go for a new worker.
	rec, err := r.store.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	prev := rec.Version
	rec.Version++
	rec.LeaseUntil = time.Now().Add(-3 * time.Second)
	if err := r.store.Replace(context.Background(), rec, prev); err != nil {
		t.Fatal(err)
	}
	r.status(t, "alice", id)
	if len(r.dispatched) != 1 {
		t.Fatal("not re-driven")
	}
	if rec, _ := r.store.Load(context.Background(), id); rec.Owner != "" {
		t.Fatalf("re-driven but still owned by %q", rec.Owner)
	}
	close(r.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := r.status(t, "alice", id); st["status"] != "completed" {
		t.Fatalf("the first worker's outcome was discarded: %v", st["status"])
	}
	if err := r.work(t); err != nil || r.runs.Load() != 1 {
		t.Fatalf("the worker dispatched again: %v, %d runs", err, r.runs.Load())
	}
}

// TestTaskCallCountsCapabilities: a task call's capabilities are part of
// what its record keeps: 500 KB of them is refused -32602, not
// retryable, before anything is stored.
func TestTaskCallCountsCapabilities(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), nil)
	caps := `{"extensions":{"io.modelcontextprotocol/tasks":{},"x":{"pad":"` + strings.Repeat("<", 500<<10) + `"}}}`
	out := r.callTool(t, "alice", "quick", `{"text":"x"}`, caps)
	if out.Error == nil || out.Error.Code != -32602 || strings.Contains(string(out.Error.Data), `"retryable":true`) ||
		!strings.Contains(string(out.Error.Data), `"reason":"task_call_too_large"`) || len(r.dispatched) != 0 {
		t.Fatalf("%+v, %d dispatched", out.Error, len(r.dispatched))
	}
}

// echoStore applies each write and then answers as a store client does
// whose acknowledgement was lost and whose retry met the write it had
// made: a Create as ErrExists, a Replace as ErrConflict (or, with
// lostAsError, as a failure to reach the store). once limits it to the
// first write of each kind.
type echoStore struct {
	tasks.Store
	lostAsError      bool
	creates, replace atomic.Int32
}

func (s *echoStore) Create(ctx context.Context, rec *tasks.Record) error {
	if err := s.Store.Create(ctx, rec); err != nil {
		return err
	}
	if s.creates.Add(1) == 1 {
		return tasks.ErrExists
	}
	return nil
}

func (s *echoStore) Replace(ctx context.Context, rec *tasks.Record, prev int64) error {
	if err := s.Store.Replace(ctx, rec, prev); err != nil {
		return err
	}
	if s.replace.Add(1)%2 == 1 {
		if s.lostAsError {
			return errors.New("connection reset after the write")
		}
		return tasks.ErrConflict
	}
	return nil
}

// TestLostAcknowledgements: writes that landed though their store client
// was told otherwise are taken for what they are. A task call whose
// creation "failed" as taken answers with its task and hands it to one
// worker; a worker whose take and outcome writes were acknowledged as
// conflicts or failures runs the handler once and records its outcome
// with no fault; a tasks/update whose write was so acknowledged still
// wakes the task.
func TestLostAcknowledgements(t *testing.T) {
	for _, lostAsError := range []bool{false, true} {
		store := &echoStore{Store: tasks.NewMemory(), lostAsError: lostAsError}
		var runs []*stateless.Outcome
		var mu sync.Mutex
		r := newTaskRig(t, store, func(o *stateless.Options, _ *tasks.Options) {
			o.Observe = func(ctx context.Context, oc *stateless.Outcome) {
				if oc.TaskRun {
					mu.Lock()
					runs = append(runs, oc)
					mu.Unlock()
				}
			}
		})
		id := r.create(t, "alice", "ask", `{"text":"x"}`)
		if len(r.dispatched) != 1 {
			t.Fatalf("lostAsError=%v: %d dispatches for one task", lostAsError, len(r.dispatched))
		}
		if err := r.work(t); err != nil && !lostAsError {
			t.Fatal(err)
		}
		if st := r.status(t, "alice", id); st["status"] != "input_required" {
			t.Fatalf("lostAsError=%v: after the first run: %v", lostAsError, st)
		}
		update := `,"inputResponses":{"a":{"action":"accept","content":{"name":"A"}},"b":{"action":"accept","content":{"name":"B"}}}`
		_, out := r.task(t, "alice", "tasks/update", id, update)
		if lostAsError {
			// A failure to reach the store is answered retryably; the
			// client's retry finds its answers stored and hands the task
			// out.
			if out.Error == nil || len(r.dispatched) != 0 {
				t.Fatalf("lostAsError: the update was acknowledged, or dispatched")
			}
			_, out = r.task(t, "alice", "tasks/update", id, update)
		}
		if out.Error != nil || len(r.dispatched) != 1 {
			t.Fatalf("tasks/update: %+v, %d dispatched", out.Error, len(r.dispatched))
		}
		if err := r.work(t); err != nil {
			t.Fatal(err)
		}
		if st := r.status(t, "alice", id); st["status"] != "completed" || r.runs.Load() != 2 {
			t.Fatalf("%v after %d runs", st["status"], r.runs.Load())
		}
		mu.Lock()
		for _, o := range runs {
			if o.Fault || o.Kind == "task_taken_over" || o.Kind == "task_not_taken" {
				t.Errorf("a run's outcome: %+v", o)
			}
		}
		mu.Unlock()
	}
}

// TestKeyedTaskIsFound: without a claim to replay it (a first call's
// instance died before its claim was completed; here, a server with no
// Idempotency), a keyed call again finds the task its key made — still
// working, or ended — and starts no second run; the same key with other
// arguments, or another caller's, is another task.
func TestKeyedTaskIsFound(t *testing.T) {
	r := newTaskRig(t, tasks.NewMemory(), nil)
	call := func(principal, args string) string {
		t.Helper()
		_, out := r.do(t, principal, "tools/call", "quick", `{"name":"quick","arguments":`+args+`,"idempotencyKey":"k1","_meta":`+wire.MetaJSON(tasksCaps)+`}`)
		id, _ := out.Result["taskId"].(string)
		if out.Error != nil || id == "" {
			t.Fatalf("%+v", out.Error)
		}
		return id
	}
	first := call("alice", `{"text":"x"}`)
	if again := call("alice", `{"text":"x"}`); again != first {
		t.Fatalf("the retry made task %s, the first %s", again, first)
	}
	// Not yet taken: handed out again, and the second delivery is fenced.
	if len(r.dispatched) != 2 {
		t.Fatalf("%d dispatches", len(r.dispatched))
	}
	r.work(t)
	r.work(t)
	if r.runs.Load() != 1 {
		t.Fatalf("%d runs", r.runs.Load())
	}
	if again := call("alice", `{"text":"x"}`); again != first || len(r.dispatched) != 0 {
		t.Fatalf("after the end: task %s, %d dispatched", again, len(r.dispatched))
	}
	if st := r.status(t, "alice", first); st["status"] != "completed" {
		t.Fatalf("%v", st)
	}
	if other := call("alice", `{"text":"y"}`); other == first {
		t.Fatal("other arguments under the same key found the first task")
	}
	if bob := call("bob", `{"text":"x"}`); bob == first {
		t.Fatal("another caller found alice's task")
	}
}
