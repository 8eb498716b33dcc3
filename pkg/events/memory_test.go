package events_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/events"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

func TestMemoryContract(t *testing.T) {
	runContract(t, func(t *testing.T, now func() time.Time, ttl time.Duration) (a, b stateless.EventLog) {
		m := &events.Memory{Now: now, TTL: ttl}
		return m, m
	})
}

// TestMemoryZeroValue: a Memory needs no setting up.
func TestMemoryZeroValue(t *testing.T) {
	var m events.Memory
	ctx := context.Background()
	now := time.Now()
	if err := m.Append(ctx, []stateless.Event{event("t", "a", now)}); err != nil {
		t.Fatal(err)
	}
	evs, err := m.Read(ctx, "t", now, 0)
	if err != nil || len(evs) != 1 || evs[0].ID != "a" {
		t.Fatalf("%v, %v", evs, err)
	}
	if changed, err := m.RecordCatalog(ctx, map[string]string{"tools": "d"}); len(changed) != 0 || err != nil {
		t.Fatalf("%v, %v", changed, err)
	}
}

// TestMemoryBound: past MaxPerTopic a topic's oldest events are dropped,
// whatever the order they came in; other topics keep theirs.
func TestMemoryBound(t *testing.T) {
	ctx := context.Background()
	m := &events.Memory{MaxPerTopic: 3}
	t0 := time.Now()
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * time.Second) }
	for _, i := range []int{2, 0, 4, 1, 3} {
		if err := m.Append(ctx, []stateless.Event{event("t", fmt.Sprint(i), at(i))}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Append(ctx, []stateless.Event{event("u", "u", t0)}); err != nil {
		t.Fatal(err)
	}
	evs, _ := m.Read(ctx, "t", t0, 0)
	if got := ids(evs); got != "2 3 4" {
		t.Fatalf("kept %s, want 2 3 4", got)
	}
	// One older than all kept is dropped at once.
	_ = m.Append(ctx, []stateless.Event{event("t", "old", at(-1))})
	if evs, _ := m.Read(ctx, "t", at(-5), 0); ids(evs) != "2 3 4" {
		t.Fatalf("after an older one: %s", ids(evs))
	}
	if evs, _ := m.Read(ctx, "u", t0, 0); ids(evs) != "u" {
		t.Fatalf("the other topic: %s", ids(evs))
	}
	if evs, _ := (&events.Memory{}).Read(ctx, "t", t0, 0); len(evs) != 0 {
		t.Fatal("another Memory shares nothing")
	}
}

// TestMemoryDefaults: a Read without a limit returns
// DefaultReadLimit events, and the bound defaults to DefaultMaxPerTopic.
func TestMemoryDefaults(t *testing.T) {
	ctx := context.Background()
	var m events.Memory
	t0 := time.Now()
	var batch []stateless.Event
	for i := range events.DefaultMaxPerTopic + 10 {
		batch = append(batch, event("t", fmt.Sprintf("%05d", i), t0.Add(time.Duration(i)*time.Microsecond)))
	}
	if err := m.Append(ctx, batch); err != nil {
		t.Fatal(err)
	}
	evs, _ := m.Read(ctx, "t", t0, 0)
	if len(evs) != events.DefaultReadLimit || evs[0].ID != "00010" {
		t.Fatalf("%d events from %s", len(evs), evs[0].ID)
	}
	evs, _ = m.Read(ctx, "t", t0, 1<<20)
	if len(evs) != events.DefaultMaxPerTopic {
		t.Fatalf("%d kept, want %d", len(evs), events.DefaultMaxPerTopic)
	}
}

// TestMemoryCopies: the caller's params are not kept, and what a Read
// returns is the reader's to change.
func TestMemoryCopies(t *testing.T) {
	ctx := context.Background()
	var m events.Memory
	e := event("t", "a", time.Now())
	if err := m.Append(ctx, []stateless.Event{e}); err != nil {
		t.Fatal(err)
	}
	e.Params[2] = 'X'
	evs, _ := m.Read(ctx, "t", time.Time{}, 0)
	evs[0].Params[3] = 'Y'
	again, _ := m.Read(ctx, "t", time.Time{}, 0)
	if string(again[0].Params) != `{"uri":"test://r"}` {
		t.Fatalf("params %s", again[0].Params)
	}
}

// TestMemoryForgetsExpiredTopics: a topic no longer written to is
// released once its events expire, by the next Append to any topic.
func TestMemoryForgetsExpiredTopics(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	m := &events.Memory{Now: c.Now, TTL: time.Minute}
	for i := range 100 {
		if err := m.Append(ctx, []stateless.Event{event(fmt.Sprint("t", i), "a", c.Now())}); err != nil {
			t.Fatal(err)
		}
	}
	c.Add(2 * time.Minute)
	if err := m.Append(ctx, []stateless.Event{event("other", "a", c.Now())}); err != nil {
		t.Fatal(err)
	}
	if n := events.MemoryTopics(m); n != 1 {
		t.Fatalf("%d topics kept after the others expired", n)
	}
	// An event appended already past its TTL is not kept.
	if err := m.Append(ctx, []stateless.Event{event("stale", "a", c.Now().Add(-2*time.Minute))}); err != nil {
		t.Fatal(err)
	}
	if n := events.MemoryTopics(m); n != 1 {
		t.Fatalf("%d topics after an expired append", n)
	}
}

// TestMemorySharedByServers: two servers in one process, sharing a
// Memory, record their events in one log, as two instances sharing a
// table do.
func TestMemorySharedByServers(t *testing.T) {
	ctx := context.Background()
	log := &events.Memory{}
	newServer := func() *stateless.Server {
		return stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{Events: log})
	}
	a, b := newServer(), newServer()
	for _, s := range []*stateless.Server{a, b} {
		if err := s.Publish(ctx, stateless.Event{Topic: stateless.TopicToolsList, Method: "notifications/tools/list_changed"}); err != nil {
			t.Fatal(err)
		}
	}
	evs, err := log.Read(ctx, stateless.TopicToolsList, time.Now().Add(-time.Minute), 0)
	if err != nil || len(evs) != 2 || evs[0].ID == evs[1].ID {
		t.Fatalf("%v, %v", evs, err)
	}
}

// TestMemoryRace: appends, reads and catalogs from many goroutines, for
// the race detector.
func TestMemoryRace(t *testing.T) {
	ctx := context.Background()
	m := &events.Memory{MaxPerTopic: 50, TTL: time.Minute}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				tp := fmt.Sprint("t", i%5)
				switch i % 4 {
				case 0, 1:
					if err := m.Append(ctx, []stateless.Event{event(tp, fmt.Sprint(g, "-", i), time.Now())}); err != nil {
						t.Error(err)
					}
				case 2:
					if evs, err := m.Read(ctx, tp, time.Now().Add(-time.Second), 10); err != nil || len(evs) > 10 {
						t.Error(len(evs), err)
					}
				case 3:
					if _, err := m.RecordCatalog(ctx, map[string]string{"tools": fmt.Sprint(i % 3)}); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestMemoryCancelled: a done context is the caller's error.
func TestMemoryCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var m events.Memory
	if err := m.Append(ctx, []stateless.Event{event("t", "a", time.Now())}); err == nil {
		t.Error("append")
	}
	if _, err := m.Read(ctx, "t", time.Time{}, 0); err == nil {
		t.Error("read")
	}
	if _, err := m.RecordCatalog(ctx, map[string]string{"tools": "d"}); err == nil {
		t.Error("catalog")
	}
}
