package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/ratelimit"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

// limited is a rig whose callers may hold n live tasks, their slots in
// slots.
func limited(t *testing.T, store tasks.Store, slots ratelimit.Slots, n int, mod func(*tasks.Options)) *taskRig {
	return newTaskRig(t, store, func(_ *stateless.Options, to *tasks.Options) {
		to.LiveTasks, to.Slots = n, slots
		if mod != nil {
			mod(to)
		}
	})
}

// refusedForLiveTasks reports whether out is the refusal of a call over
// its live-task quota: rate_limited, retryable, never a server fault's
// dependency_failure.
func refusedForLiveTasks(out *wire.RPC) bool {
	return out.Error != nil && strings.Contains(string(out.Error.Data), `"type":"rate_limited"`) && strings.Contains(string(out.Error.Data), `"retryable":true`)
}

// TestLiveTaskQuota: a caller holds at most its quota of live tasks — the
// call past it is refused rate_limited and stores nothing, while another
// caller starts tasks — and a task that completes, is cancelled or
// expires gives its slot back. On today's code (no quota), the hostile
// caller's fourth, fifth… tasks all start.
func TestLiveTaskQuota(t *testing.T) {
	slots := &ratelimit.MemorySlots{}
	store := tasks.NewMemory()
	r := limited(t, store, slots, 3, func(to *tasks.Options) { to.TTL = 2 * time.Second })
	var ids []string
	for i := range 3 {
		ids = append(ids, r.create(t, "mallory", "block", fmt.Sprintf(`{"text":"%d"}`, i)))
	}
	for range 5 {
		if out := r.callTool(t, "mallory", "block", `{"text":"more"}`, tasksCaps); !refusedForLiveTasks(out) {
			t.Fatalf("a task past the quota: %+v %+v", out.Result, out.Error)
		}
	}
	if n := len(r.dispatched); n != 3 {
		t.Fatalf("%d tasks dispatched, want 3", n)
	}
	// Another caller is not charged for mallory's tasks.
	r.create(t, "alice", "quick", `{"text":"a"}`)

	// Mallory's tasks/get and tasks/cancel still work at the quota.
	if st := r.status(t, "mallory", ids[0]); st["status"] != "working" {
		t.Fatalf("tasks/get at the quota: %v", st)
	}
	if _, out := r.task(t, "mallory", "tasks/cancel", ids[0], ""); out.Error != nil {
		t.Fatalf("tasks/cancel at the quota: %+v", out.Error)
	}
	// The cancelled task gave its slot back: one more starts, and then no
	// more.
	r.create(t, "mallory", "quick", `{"text":"after cancel"}`)
	if out := r.callTool(t, "mallory", "quick", `{"text":"x"}`, tasksCaps); !refusedForLiveTasks(out) {
		t.Fatalf("past the quota after a cancel: %+v", out.Error)
	}
	// Completing one gives its slot back.
	for len(r.dispatched) > 0 {
		id := <-r.dispatched
		if rec, _ := store.Load(context.Background(), id); rec != nil && rec.Tool == "quick" && rec.Principal == "mallory" {
			if err := r.ext.Run(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		}
	}
	r.create(t, "mallory", "quick", `{"text":"after completion"}`)
	// Tasks that expire without ending give theirs back at their expiry.
	time.Sleep(2100 * time.Millisecond)
	if held, _ := slots.Held(context.Background(), "mallory"); len(held) != 0 {
		t.Fatalf("expired tasks still hold %d slots", len(held))
	}
	for i := range 3 {
		r.create(t, "mallory", "quick", fmt.Sprintf(`{"text":"after expiry %d"}`, i))
	}
}

// TestLiveTaskQuotaAnonymous: anonymous callers are charged by the address
// the transport verified, not all together: one anonymous address at its
// quota leaves another's allowance whole.
func TestLiveTaskQuotaAnonymous(t *testing.T) {
	r := limited(t, tasks.NewMemory(), &ratelimit.MemorySlots{}, 2, nil)
	call := func(addr string) *wire.RPC {
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{"text":"x"},"_meta":` + wire.MetaJSON(tasksCaps) + `}}`
		resp := r.srv.Handle(context.Background(), &stateless.Request{Method: http.MethodPost, Header: wire.ModernHeaders("tools/call", "block"), Body: []byte(body), Host: "api.example.com", Address: addr})
		return wire.DecodeRPC(t, resp.Body)
	}
	for range 2 {
		if out := call("192.0.2.1"); out.Error != nil {
			t.Fatal(out.Error)
		}
	}
	if out := call("192.0.2.1"); !refusedForLiveTasks(out) {
		t.Fatalf("a third anonymous task from one address: %+v", out.Error)
	}
	if out := call("192.0.2.2"); out.Error != nil {
		t.Fatalf("another address was charged for the first's tasks: %+v", out.Error)
	}
}

// lossyStore loses the acknowledgement of every write that ends a task:
// the write lands, and its caller sees a failure.
type lossyStore struct{ tasks.Store }

var errLost = errors.New("the acknowledgement was lost")

func (s lossyStore) Replace(ctx context.Context, rec *tasks.Record, prev int64) error {
	if err := s.Store.Replace(ctx, rec, prev); err != nil {
		return err
	}
	if rec.Status.Terminal() {
		return errLost
	}
	return nil
}

// TestLiveTaskSlotsDoNotDrift: a lost acknowledgement of the write that
// ends a task neither leaks its slot nor frees it twice (the worker
// retries the write, and gives the slot back once, by name), and a slot
// left held for a task that ended — a worker that died between the two
// writes — is reclaimed when its caller meets the quota.
func TestLiveTaskSlotsDoNotDrift(t *testing.T) {
	ctx := context.Background()
	slots := &ratelimit.MemorySlots{}
	r := limited(t, lossyStore{tasks.NewMemory()}, slots, 2, nil)
	a := r.create(t, "mallory", "quick", `{"text":"a"}`)
	r.create(t, "mallory", "quick", `{"text":"b"}`)
	_ = r.work(t) // its outcome write lands, unacknowledged
	_ = r.work(t)
	if held, _ := slots.Held(ctx, "mallory"); len(held) != 0 {
		t.Fatalf("%d slots held after both tasks ended", len(held))
	}
	for range 2 {
		r.create(t, "mallory", "quick", `{"text":"again"}`)
	}
	if out := r.callTool(t, "mallory", "quick", `{"text":"x"}`, tasksCaps); !refusedForLiveTasks(out) {
		t.Fatalf("past the quota after lost acknowledgements: %+v", out.Error)
	}

	// A slot held for an ended task: taken again behind the store's back.
	_ = r.work(t)
	_ = r.work(t)
	if err := slots.Take(ctx, "mallory", a, time.Now().Add(time.Hour), 2); err != nil {
		t.Fatal(err)
	}
	if err := slots.Take(ctx, "mallory", "gone-task", time.Now().Add(time.Hour), 2); err != nil {
		t.Fatal(err)
	}
	r.create(t, "mallory", "quick", `{"text":"reclaimed"}`)
}

// TestMemoryStoreShares: one caller cannot fill the memory store. Past
// its share it is refused with ErrShare, which the call answers
// rate_limited, while another caller's tasks are stored; and a store
// full of one caller's ended tasks forgets those, oldest first, to make
// room for another's. On today's code the flood fills the store and every
// caller's task call fails with a server fault.
func TestMemoryStoreShares(t *testing.T) {
	ctx := context.Background()
	m := tasks.NewMemoryWith(tasks.MemoryOptions{MaxTasks: 40, Shares: 4})
	now := time.Now()
	rec := func(id, principal string, st tasks.Status) *tasks.Record {
		return &tasks.Record{ID: id, Version: 1, Principal: principal, Status: st, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	n := 0
	for ; n < 100; n++ {
		if err := m.Create(ctx, rec(fmt.Sprint("m", n), "mallory", tasks.StatusCompleted)); err != nil {
			if !errors.Is(err, tasks.ErrShare) {
				t.Fatalf("task %d: %v", n, err)
			}
			break
		}
	}
	if n != 10 {
		t.Fatalf("mallory stored %d tasks, want its share of 10", n)
	}
	if err := m.Create(ctx, rec("a0", "alice", tasks.StatusWorking)); err != nil {
		t.Fatalf("alice beside mallory's share: %v", err)
	}
	// Through the extension: the refusal is rate_limited, not a fault.
	r := newTaskRig(t, tasks.NewMemoryWith(tasks.MemoryOptions{MaxTasks: 8, Shares: 4}), nil)
	r.create(t, "mallory", "quick", `{"text":"1"}`)
	r.create(t, "mallory", "quick", `{"text":"2"}`)
	if out := r.callTool(t, "mallory", "quick", `{"text":"3"}`, tasksCaps); !refusedForLiveTasks(out) {
		t.Fatalf("past the share: %+v", out.Error)
	}
	r.create(t, "alice", "quick", `{"text":"1"}`)

	// A store full of ended tasks of many callers, the most of them
	// mallory's: a new caller's task forgets mallory's oldest.
	full := tasks.NewMemoryWith(tasks.MemoryOptions{MaxTasks: 8, Shares: 2})
	for i := range 4 {
		r := rec(fmt.Sprint("m", i), "mallory", tasks.StatusCompleted)
		r.UpdatedAt = now.Add(time.Duration(i) * time.Second)
		if err := full.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		if err := full.Create(ctx, rec(fmt.Sprint("b", i), "bob", tasks.StatusWorking)); err != nil && i < 3 {
			t.Fatal(err)
		}
	}
	if err := full.Create(ctx, rec("c0", "carol", tasks.StatusWorking)); err != nil {
		t.Fatalf("a new caller in a store full of ended tasks: %v", err)
	}
	if _, err := full.Load(ctx, "m0"); !errors.Is(err, tasks.ErrNoTask) {
		t.Fatalf("mallory's oldest ended task was kept: %v", err)
	}
	for _, id := range []string{"m1", "b0", "b1", "b2", "b3"} {
		if _, err := full.Load(ctx, id); err != nil {
			t.Fatalf("%s forgotten: %v", id, err)
		}
	}
}

// TestLiveTaskSlotBeingCreated: a slot whose task is not stored is
// reclaimed at the quota only once it was taken longer ago than a create
// takes: a slot just taken is a task another call is storing right now
// (the abuse run caught a fourth task over a quota of 3 this way), and
// one left by a call that died before storing it frees two minutes on.
func TestLiveTaskSlotBeingCreated(t *testing.T) {
	ctx := context.Background()
	slots := &ratelimit.MemorySlots{}
	ttl := time.Hour
	r := limited(t, tasks.NewMemory(), slots, 2, func(to *tasks.Options) { to.TTL = ttl })
	// Taken a second ago, its record not stored yet: the oldest slot.
	if err := slots.Take(ctx, "mallory", "being-stored", time.Now().Add(ttl-time.Second), 2); err != nil {
		t.Fatal(err)
	}
	r.create(t, "mallory", "block", `{"text":"stored"}`)
	if out := r.callTool(t, "mallory", "quick", `{"text":"x"}`, tasksCaps); !refusedForLiveTasks(out) {
		t.Fatalf("a slot being created was reclaimed: %+v %+v", out.Result, out.Error)
	}
	_ = slots.Give(ctx, "mallory", "being-stored")
	if err := slots.Take(ctx, "mallory", "died-before-storing", time.Now().Add(ttl-3*time.Minute), 2); err != nil {
		t.Fatal(err)
	}
	r.create(t, "mallory", "quick", `{"text":"after a dead create"}`)
}
