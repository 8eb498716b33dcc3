package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// The contract every EventLog of this package meets. It runs against
// Memory (memory_test.go) and against DynamoDB Local
// (dynamo_integration_test.go), so that both keep and return the same
// events.

// newLogs makes two instances of one log, as two instances of an
// endpoint have them (one Memory twice; two DynamoDB values on one
// table), whose clock is now and whose TTL is ttl. Each subtest writes
// topics and catalogs of its own, so the log need not be empty.
type newLogs func(t *testing.T, now func() time.Time, ttl time.Duration) (a, b stateless.EventLog)

// clock is a test's clock, which it moves by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// newClock starts at the real time: a table's TTL, if DynamoDB Local
// applies it, then deletes only what the test means to have expired.
func newClock() *clock { return &clock{t: time.Now().Truncate(time.Second)} }

var unique atomic.Int64

// topic is a topic no other test writes to: a resource's URI, long, as
// topics may be.
func topic(t *testing.T) string {
	return stateless.ResourceTopic(fmt.Sprintf("test://%s/%d/%d/%s", t.Name(), time.Now().UnixNano(), unique.Add(1), strings.Repeat("x", 300)))
}

func event(topic, id string, at time.Time) stateless.Event {
	return stateless.Event{Topic: topic, ID: id, At: at, Method: "notifications/resources/updated", Params: json.RawMessage(`{"uri":"test://r"}`)}
}

// sameEvents reports how got differs from want, "" when it does not:
// times compared as instants, params byte for byte with nil apart from
// empty.
func sameEvents(got, want []stateless.Event) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d events, want %d:\n got %s\nwant %s", len(got), len(want), ids(got), ids(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Topic != w.Topic || g.ID != w.ID || !g.At.Equal(w.At) || g.Owner != w.Owner || g.Method != w.Method ||
			!bytes.Equal(g.Params, w.Params) || (g.Params == nil) != (w.Params == nil) {
			return fmt.Sprintf("event %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
	return ""
}

func ids(evs []stateless.Event) string {
	s := make([]string, len(evs))
	for i, e := range evs {
		s[i] = e.ID
	}
	return strings.Join(s, " ")
}

func runContract(t *testing.T, newLogs newLogs) {
	ctx := context.Background()
	read := func(t *testing.T, log stateless.EventLog, topic string, since time.Time, limit int) []stateless.Event {
		t.Helper()
		evs, err := log.Read(ctx, topic, since, limit)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return evs
	}
	appendOK := func(t *testing.T, log stateless.EventLog, evs ...stateless.Event) {
		t.Helper()
		if err := log.Append(ctx, evs); err != nil {
			t.Fatalf("append: %v", err)
		}
	}

	t.Run("what one instance appends another reads, as it was", func(t *testing.T) {
		c := newClock()
		a, b := newLogs(t, c.Now, time.Hour)
		tp := topic(t)
		plain := event(tp, "plain", c.Now())
		owned := event(tp, "owned", c.Now().Add(time.Millisecond))
		owned.Owner = "alice"
		bare := event(tp, "bare", c.Now().Add(2*time.Millisecond))
		bare.Params = nil
		big := event(tp, "big", c.Now().Add(3*time.Millisecond))
		big.Params = json.RawMessage(`{"uri":"` + strings.Repeat("é", (stateless.MaxEventParams-12)/2) + `"}`)
		appendOK(t, a, plain, owned, bare, big)
		if d := sameEvents(read(t, b, tp, c.Now(), 0), []stateless.Event{plain, owned, bare, big}); d != "" {
			t.Fatal(d)
		}
	})

	t.Run("since is inclusive, to the nanosecond", func(t *testing.T) {
		c := newClock()
		a, b := newLogs(t, c.Now, time.Hour)
		tp := topic(t)
		t0 := c.Now().Add(123456789 * time.Nanosecond)
		e0, e1, e2 := event(tp, "e0", t0), event(tp, "e1", t0.Add(time.Nanosecond)), event(tp, "e2", t0.Add(2*time.Nanosecond))
		appendOK(t, a, e0, e1, e2)
		if d := sameEvents(read(t, b, tp, t0.Add(time.Nanosecond), 0), []stateless.Event{e1, e2}); d != "" {
			t.Fatal(d)
		}
		if d := sameEvents(read(t, b, tp, t0, 0), []stateless.Event{e0, e1, e2}); d != "" {
			t.Fatal(d)
		}
		if evs := read(t, b, tp, t0.Add(3*time.Nanosecond), 0); len(evs) != 0 {
			t.Fatalf("after the last: %s", ids(evs))
		}
		if d := sameEvents(read(t, b, tp, time.Time{}, 0), []stateless.Event{e0, e1, e2}); d != "" {
			t.Fatalf("since the zero time: %s", d)
		}
	})

	t.Run("oldest first, those at the same time by ID", func(t *testing.T) {
		c := newClock()
		a, b := newLogs(t, c.Now, time.Hour)
		tp := topic(t)
		t0 := c.Now()
		e3, e1 := event(tp, "3", t0.Add(3*time.Second)), event(tp, "1", t0.Add(time.Second))
		e2b, e2a, e2c := event(tp, "2b", t0.Add(2*time.Second)), event(tp, "2a", t0.Add(2*time.Second)), event(tp, "2c", t0.Add(2*time.Second))
		appendOK(t, a, e3, e2b)
		appendOK(t, b, e1, e2c, e2a)
		want := []stateless.Event{e1, e2a, e2b, e2c, e3}
		for _, log := range []stateless.EventLog{a, b} {
			if d := sameEvents(read(t, log, tp, t0, 0), want); d != "" {
				t.Fatal(d)
			}
		}
	})

	t.Run("at most limit, the oldest", func(t *testing.T) {
		c := newClock()
		a, b := newLogs(t, c.Now, time.Hour)
		tp := topic(t)
		var all []stateless.Event
		for i := range 5 {
			all = append(all, event(tp, fmt.Sprint(i), c.Now().Add(time.Duration(i)*time.Millisecond)))
		}
		appendOK(t, a, all...)
		if d := sameEvents(read(t, b, tp, c.Now(), 2), all[:2]); d != "" {
			t.Fatal(d)
		}
		if d := sameEvents(read(t, b, tp, all[2].At, 2), all[2:4]); d != "" {
			t.Fatal(d)
		}
		if d := sameEvents(read(t, b, tp, c.Now(), -1), all); d != "" {
			t.Fatalf("no limit: %s", d)
		}
	})

	t.Run("more than a page, read page after page", func(t *testing.T) {
		c := newClock()
		a, b := newLogs(t, c.Now, time.Hour)
		tp := topic(t)
		var all []stateless.Event
		for i := range 150 {
			e := event(tp, fmt.Sprintf("e%03d", i), c.Now().Add(time.Duration(i)*time.Microsecond))
			e.Params = json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("p", 500)))
			all = append(all, e)
		}
		appendOK(t, a, all...)
		first := read(t, b, tp, c.Now(), 100)
		if d := sameEvents(first, all[:100]); d != "" {
			t.Fatal(d)
		}
		// As a listen stream pages: from the last event read, which it
		// reads again and suppresses.
		rest := read(t, b, tp, first[len(first)-1].At, 100)
		if d := sameEvents(rest, all[99:]); d != "" {
			t.Fatal(d)
		}
	})

	t.Run("a topic's events only", func(t *testing.T) {
		c := newClock()
		a, b := newLogs(t, c.Now, time.Hour)
		x, y := topic(t), topic(t)
		ex, ey := event(x, "x", c.Now()), event(y, "y", c.Now())
		appendOK(t, a, ex, ey)
		if d := sameEvents(read(t, b, x, c.Now(), 0), []stateless.Event{ex}); d != "" {
			t.Fatal(d)
		}
		if d := sameEvents(read(t, b, y, c.Now(), 0), []stateless.Event{ey}); d != "" {
			t.Fatal(d)
		}
		if evs := read(t, b, topic(t), c.Now(), 0); len(evs) != 0 {
			t.Fatalf("a topic never written to: %s", ids(evs))
		}
	})

	t.Run("the same event recorded again is kept once", func(t *testing.T) {
		c := newClock()
		a, b := newLogs(t, c.Now, time.Hour)
		tp := topic(t)
		var batch, want []stateless.Event
		for i := range 30 {
			e := event(tp, fmt.Sprintf("e%02d", i), c.Now().Add(time.Duration(i)*time.Millisecond))
			want = append(want, e)
			batch = append(batch, e)
			// The same event again, in the same chunk of 25 or the next.
			if i%3 == 0 {
				batch = append(batch, e)
			}
		}
		appendOK(t, a, batch...)
		appendOK(t, b, want[:5]...) // a retry, from another instance
		if d := sameEvents(read(t, b, tp, c.Now(), 0), want); d != "" {
			t.Fatal(d)
		}
		// The same ID at another time is another item; the reader, which
		// suppresses by ID, sends it once.
		later := event(tp, "e00", c.Now().Add(time.Second))
		appendOK(t, a, later)
		if evs := read(t, b, tp, c.Now(), 0); len(evs) != 31 || evs[30].ID != "e00" {
			t.Fatalf("after a retry at another time: %s", ids(evs))
		}
	})

	t.Run("expired events are left out", func(t *testing.T) {
		c := newClock()
		a, b := newLogs(t, c.Now, time.Hour)
		tp := topic(t)
		old := event(tp, "old", c.Now().Add(-time.Hour-time.Second))
		edge := event(tp, "edge", c.Now().Add(-time.Hour+time.Second))
		fresh := event(tp, "fresh", c.Now())
		appendOK(t, a, old, edge, fresh)
		if d := sameEvents(read(t, b, tp, time.Time{}, 0), []stateless.Event{edge, fresh}); d != "" {
			t.Fatal(d)
		}
		c.Add(2 * time.Second)
		if d := sameEvents(read(t, b, tp, time.Time{}, 0), []stateless.Event{fresh}); d != "" {
			t.Fatalf("a second past edge's TTL: %s", d)
		}
		c.Add(time.Hour)
		if evs := read(t, b, tp, time.Time{}, 0); len(evs) != 0 {
			t.Fatalf("an hour later: %s", ids(evs))
		}
	})

	t.Run("a batch with an event that cannot be recorded is refused whole", func(t *testing.T) {
		c := newClock()
		a, b := newLogs(t, c.Now, time.Hour)
		tp := topic(t)
		good := event(tp, "good", c.Now())
		for name, bad := range map[string]func(e *stateless.Event){
			"no topic":          func(e *stateless.Event) { e.Topic = "" },
			"no ID":             func(e *stateless.Event) { e.ID = "" },
			"no method":         func(e *stateless.Event) { e.Method = "" },
			"params not object": func(e *stateless.Event) { e.Params = json.RawMessage(`[1]`) },
			"params with _meta": func(e *stateless.Event) { e.Params = json.RawMessage(`{"_meta":{}}`) },
			"params empty":      func(e *stateless.Event) { e.Params = json.RawMessage{} },
			"params too large": func(e *stateless.Event) {
				e.Params = json.RawMessage(`{"a":"` + strings.Repeat("a", stateless.MaxEventParams) + `"}`)
			},
			"no time":         func(e *stateless.Event) { e.At = time.Time{} },
			"before 1970":     func(e *stateless.Event) { e.At = time.Unix(-1, 0) },
			"ID too long":     func(e *stateless.Event) { e.ID = strings.Repeat("i", 513) },
			"topic not UTF-8": func(e *stateless.Event) { e.Topic = tp + "\xff" },
			"owner not UTF-8": func(e *stateless.Event) { e.Owner = "\xc3" },
		} {
			e := event(tp, "bad", c.Now())
			bad(&e)
			batch := make([]stateless.Event, 0, 30)
			for range 28 {
				batch = append(batch, good)
			}
			batch = append(batch, e)
			if err := a.Append(ctx, batch); err == nil {
				t.Errorf("%s: appended", name)
			}
		}
		if evs := read(t, b, tp, time.Time{}, 0); len(evs) != 0 {
			t.Fatalf("refused batches recorded %s", ids(evs))
		}
		if err := a.Append(ctx, nil); err != nil {
			t.Fatalf("no events: %v", err)
		}
	})

	t.Run("a catalog reports a change of its digest", func(t *testing.T) {
		c := newClock()
		a, b := newLogs(t, c.Now, time.Hour)
		name := fmt.Sprintf("tools-%s-%d", t.Name(), unique.Add(1))
		steps := []struct {
			log     stateless.EventLog
			digest  string
			changed bool
		}{
			{a, "d1", false}, // the first record
			{b, "d1", false}, // another instance of the same deploy
			{a, "d1", false},
			{b, "d2", true}, // a new deploy
			{a, "d2", false},
			{a, "d1", true}, // rolled back
		}
		for i, s := range steps {
			names, err := s.log.RecordCatalog(ctx, map[string]string{name: s.digest, name + "-fixed": "f"})
			changed := slices.Contains(names, name)
			if err != nil || changed != s.changed || slices.Contains(names, name+"-fixed") || len(names) > 1 {
				t.Fatalf("step %d (%s): %v, %v; want %v", i, s.digest, changed, err, s.changed)
			}
		}
		if changed, err := b.RecordCatalog(ctx, map[string]string{name + "-other": "d2"}); err != nil || len(changed) != 0 {
			t.Fatalf("another catalog's first record: %v, %v", changed, err)
		}
	})

	t.Run("concurrent appends and reads", func(t *testing.T) {
		c := newClock()
		a, b := newLogs(t, c.Now, time.Hour)
		tp := topic(t)
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(2)
			go func() {
				defer wg.Done()
				log := []stateless.EventLog{a, b}[w%2]
				for i := range 10 {
					if err := log.Append(ctx, []stateless.Event{event(tp, fmt.Sprintf("w%d-%d", w, i), c.Now().Add(time.Duration(i)*time.Millisecond))}); err != nil {
						t.Error(err)
					}
				}
			}()
			go func() {
				defer wg.Done()
				for range 10 {
					if _, err := b.Read(ctx, tp, c.Now(), 0); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		wg.Wait()
		evs := read(t, a, tp, c.Now(), 0)
		if len(evs) != 40 {
			t.Fatalf("%d events after 40 appends", len(evs))
		}
		for i := 1; i < len(evs); i++ {
			if p, e := evs[i-1], evs[i]; p.At.After(e.At) || p.At.Equal(e.At) && p.ID >= e.ID {
				t.Fatalf("out of order: %s", ids(evs))
			}
		}
	})
}
