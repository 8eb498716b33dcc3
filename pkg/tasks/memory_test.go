package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks/taskstest"
)

func TestMemoryContract(t *testing.T) {
	taskstest.Run(t, func(t *testing.T) tasks.Store { return tasks.NewMemory() })
}

// TestMemoryBounded: a full store forgets expired tasks to make room, and
// refuses a new task rather than forget a live one (one share: the
// caller may fill it).
func TestMemoryBounded(t *testing.T) {
	ctx := context.Background()
	m := tasks.NewMemoryWith(tasks.MemoryOptions{MaxTasks: 2, Shares: 1})
	now := time.Now()
	rec := func(id string, ttl time.Duration) *tasks.Record {
		return &tasks.Record{ID: id, Version: 1, CreatedAt: now, ExpiresAt: now.Add(ttl)}
	}
	if err := m.Create(ctx, rec("old", -time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := m.Create(ctx, rec("a", time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := m.Create(ctx, rec("b", time.Hour)); err != nil {
		t.Fatalf("the expired task was not forgotten: %v", err)
	}
	if err := m.Create(ctx, rec("c", time.Hour)); err == nil {
		t.Fatal("a third live task in a store of two")
	}
	if _, err := m.Load(ctx, "a"); err != nil {
		t.Fatalf("a live task was forgotten: %v", err)
	}
}

// TestMemoryBoundedByBytes: a live task holds room for the largest
// record, so that its outcome always fits; an ended one holds its own
// size. A store out of room refuses new tasks with ErrFull, forgets
// expired ones to make room, and never a live one.
func TestMemoryBoundedByBytes(t *testing.T) {
	ctx := context.Background()
	m := tasks.NewMemoryWith(tasks.MemoryOptions{MaxBytes: 2 * tasks.MaxRecordBytes, Shares: 1})
	now := time.Now()
	rec := func(id string, ttl time.Duration) *tasks.Record {
		return &tasks.Record{ID: id, Version: 1, Status: tasks.StatusWorking, CreatedAt: now, ExpiresAt: now.Add(ttl),
			Arguments: json.RawMessage(`{}`)}
	}
	for _, id := range []string{"a", "b"} {
		if err := m.Create(ctx, rec(id, time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Create(ctx, rec("c", time.Hour)); !errors.Is(err, tasks.ErrFull) {
		t.Fatalf("a third live task in room for two: %v", err)
	}
	// a ends with a result of almost the largest size: it still fits,
	// and then holds only its size.
	a, err := m.Load(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	a.Version, a.Status, a.Arguments = 2, tasks.StatusCompleted, nil
	a.Result = json.RawMessage(`"` + strings.Repeat("<", tasks.MaxRecordBytes-100) + `"`)
	if err := m.Replace(ctx, a, 1); err != nil {
		t.Fatalf("the outcome of a live task: %v", err)
	}
	if err := m.Create(ctx, rec("c", time.Hour)); !errors.Is(err, tasks.ErrFull) {
		t.Fatalf("a live task beside two that hold the store: %v", err)
	}
	// b is cancelled with no result: room for another live task.
	b, _ := m.Load(ctx, "b")
	b.Version, b.Status, b.Arguments = 2, tasks.StatusCancelled, nil
	if err := m.Replace(ctx, b, 1); err != nil {
		t.Fatal(err)
	}
	if err := m.Create(ctx, rec("c", time.Hour)); err != nil {
		t.Fatalf("room was freed by an ended task: %v", err)
	}
	if got, err := m.Load(ctx, "a"); err != nil || len(got.Result) != len(a.Result) {
		t.Fatalf("the completed task: %v", err)
	}
	// A record over the largest is refused as too large, not as full.
	big := rec("d", time.Hour)
	big.Arguments = json.RawMessage(`"` + strings.Repeat("x", tasks.MaxRecordBytes) + `"`)
	if err := m.Create(ctx, big); !errors.Is(err, tasks.ErrTooLarge) {
		t.Fatalf("an oversized record: %v", err)
	}
	// Expired tasks give their room back.
	m2 := tasks.NewMemoryWith(tasks.MemoryOptions{MaxBytes: tasks.MaxRecordBytes})
	if err := m2.Create(ctx, rec("old", -time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := m2.Create(ctx, rec("new", time.Hour)); err != nil {
		t.Fatalf("an expired task kept its room: %v", err)
	}
}
