package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks/taskstest"
)

func TestMemoryContract(t *testing.T) {
	taskstest.Run(t, func(t *testing.T) stateless.TaskStore { return tasks.NewMemory() })
}

// TestMemoryBounded: a full store forgets expired tasks to make room, and
// refuses a new task rather than forget a live one.
func TestMemoryBounded(t *testing.T) {
	ctx := context.Background()
	m := tasks.NewMemoryWith(2)
	now := time.Now()
	rec := func(id string, ttl time.Duration) *stateless.TaskRecord {
		return &stateless.TaskRecord{ID: id, Version: 1, CreatedAt: now, ExpiresAt: now.Add(ttl)}
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
