// Package taskstest is the contract every tasks.Store must meet.
// One suite runs against the memory store and against DynamoDB (Local in
// tests), so that both have the same semantics.
package taskstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

// Run runs the contract against stores made by newStore.
func Run(t *testing.T, newStore func(t *testing.T) tasks.Store) {
	ctx := context.Background()
	var seq atomic.Int64
	record := func() *tasks.Record {
		now := time.Now().Truncate(time.Millisecond)
		return &tasks.Record{
			ID: fmt.Sprintf("contract-%d-%d", now.UnixNano(), seq.Add(1)), Version: 1, Principal: "alice", Tool: "slow",
			Status: tasks.StatusWorking, CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(time.Hour),
			Arguments: json.RawMessage(`{"n":1}`), ProtocolVersion: "2026-07-28", Capabilities: json.RawMessage(`{"extensions":{}}`),
			State: []byte{0, 1, 2}, HasState: true, Responses: map[string]json.RawMessage{"a": json.RawMessage(`{"action":"accept"}`)},
			Asked: []string{"a"}, LeaseUntil: now.Add(time.Minute),
		}
	}

	t.Run("a created task loads as it was written", func(t *testing.T) {
		s, r := newStore(t), record()
		if err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		got, err := s.Load(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !equal(got, r) {
			t.Fatalf("loaded %+v\nwrote  %+v", got, r)
		}
	})
	t.Run("an id is created once", func(t *testing.T) {
		s, r := newStore(t), record()
		if err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, r); !errors.Is(err, tasks.ErrExists) {
			t.Fatalf("second create: %v", err)
		}
	})
	t.Run("an unknown id is no task", func(t *testing.T) {
		if _, err := newStore(t).Load(ctx, "never-created"); !errors.Is(err, tasks.ErrNoTask) {
			t.Fatalf("load: %v", err)
		}
		r := record()
		r.Version = 2
		if err := newStore(t).Replace(ctx, r, 1); !errors.Is(err, tasks.ErrNoTask) {
			t.Fatalf("replace: %v", err)
		}
	})
	t.Run("a replace holds for the version read, and only for it", func(t *testing.T) {
		s, r := newStore(t), record()
		if err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		next := *r
		next.Version, next.Status, next.Result = 2, tasks.StatusCompleted, json.RawMessage(`{"content":[]}`)
		if err := s.Replace(ctx, &next, 1); err != nil {
			t.Fatal(err)
		}
		stale := *r
		stale.Version, stale.Status = 2, tasks.StatusCancelled
		if err := s.Replace(ctx, &stale, 1); !errors.Is(err, tasks.ErrConflict) {
			t.Fatalf("stale replace: %v", err)
		}
		got, err := s.Load(ctx, r.ID)
		if err != nil || got.Version != 2 || got.Status != tasks.StatusCompleted || string(got.Result) != `{"content":[]}` {
			t.Fatalf("after: %+v %v", got, err)
		}
	})
	t.Run("an expired task is gone, and its id may be used again", func(t *testing.T) {
		s, r := newStore(t), record()
		r.ExpiresAt = time.Now().Add(-time.Second)
		if err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(ctx, r.ID); !errors.Is(err, tasks.ErrNoTask) {
			t.Fatalf("load: %v", err)
		}
		next := *r
		next.Version = 2
		if err := s.Replace(ctx, &next, 1); err == nil {
			t.Fatal("replaced an expired task")
		}
		r.ExpiresAt = time.Now().Add(time.Hour).Truncate(time.Millisecond)
		if err := s.Create(ctx, r); err != nil {
			t.Fatalf("create over an expired task: %v", err)
		}
	})
	t.Run("racing writers lose no update", func(t *testing.T) {
		s, r := newStore(t), record()
		r.Responses = map[string]json.RawMessage{}
		if err := s.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		const writers, each = 8, 5
		var wg sync.WaitGroup
		var failed atomic.Int64
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					for {
						cur, err := s.Load(ctx, r.ID)
						if err != nil {
							failed.Add(1)
							return
						}
						prev := cur.Version
						cur.Version++
						if cur.Responses == nil {
							cur.Responses = map[string]json.RawMessage{}
						}
						cur.Responses[fmt.Sprintf("w%d-%d", w, i)] = json.RawMessage(`{}`)
						err = s.Replace(ctx, cur, prev)
						if err == nil {
							break
						}
						if !errors.Is(err, tasks.ErrConflict) {
							failed.Add(1)
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		got, err := s.Load(ctx, r.ID)
		if err != nil || failed.Load() != 0 {
			t.Fatalf("%v, %d writers failed", err, failed.Load())
		}
		if len(got.Responses) != writers*each || got.Version != 1+writers*each {
			t.Fatalf("%d updates kept, version %d; want %d", len(got.Responses), got.Version, writers*each)
		}
	})
}

// equal compares records as a store keeps them: times to the millisecond.
func equal(a, b *tasks.Record) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var ma, mb any
	json.Unmarshal(ja, &ma)
	json.Unmarshal(jb, &mb)
	return reflect.DeepEqual(ma, mb)
}
