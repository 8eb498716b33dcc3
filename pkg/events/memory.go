package events

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// DefaultMaxPerTopic is how many events Memory keeps of a topic when its
// MaxPerTopic is not set.
const DefaultMaxPerTopic = 1024

// Memory is an EventLog in this process, which the stateless.Servers of
// one process share as a deploy's instances share a table: an event one
// of them publishes, a listen stream on another reads. Its zero value is
// ready to use; set its fields before the first use, not after. It is
// safe for concurrent use.
//
// It takes the same events as DynamoDB and answers the same reads, so
// that what is tested on it holds of the table: events at or after since
// by At, then ID; an event recorded again with the same At and ID is kept
// once; events past their TTL are left out. What a process does not need
// it does not keep: past MaxPerTopic a topic's oldest events are dropped,
// and a topic whose events have all expired is forgotten.
type Memory struct {
	// MaxPerTopic bounds the events kept of each topic, the oldest (by
	// At) dropped first; 0 is DefaultMaxPerTopic. A listen stream reads a
	// few seconds back, so only a burst larger than this within them
	// loses events.
	MaxPerTopic int
	// TTL is how long after its At an event is kept; 0 is DefaultTTL.
	TTL time.Duration
	// Now is the clock events expire by; nil is time.Now.
	Now func() time.Time

	mu       sync.RWMutex
	topics   map[string][]memEvent // each in the order of (at, ID)
	catalogs map[string]string
	swept    time.Time // when every topic was last pruned
}

// memEvent is a kept event with its sort key's parts and its expiry.
type memEvent struct {
	at  int64 // Unix nanoseconds
	exp int64 // epoch seconds
	e   stateless.Event
}

var _ stateless.EventLog = (*Memory)(nil)

func (m *Memory) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Memory) ttl() time.Duration {
	if m.TTL > 0 {
		return m.TTL
	}
	return DefaultTTL
}

func (m *Memory) maxPerTopic() int {
	if m.MaxPerTopic > 0 {
		return m.MaxPerTopic
	}
	return DefaultMaxPerTopic
}

// sweepEvery is how often an Append prunes every topic, not only those it
// writes to: the expired events of a topic no longer written to are
// released within it (or the TTL, when shorter).
const sweepEvery = time.Minute

// compare orders kept events as DynamoDB's sort key does: by At, then by
// ID byte by byte.
func compare(a memEvent, at int64, id string) int {
	switch {
	case a.at < at:
		return -1
	case a.at > at:
		return 1
	}
	return strings.Compare(a.e.ID, id)
}

// Append implements stateless.EventLog. It refuses the whole batch, and
// keeps none of it, when any event fails stateless.CheckEvent or this
// package's bounds (an At from 1970 to 2262, UTF-8 strings, an ID of at
// most 512 bytes). The events are copied: the caller may reuse them.
func (m *Memory) Append(ctx context.Context, events []stateless.Event) error {
	if err := checkAll(events); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("events: appending: %w", err)
	}
	now, ttl, bound := m.now(), m.ttl(), m.maxPerTopic()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.topics == nil {
		m.topics = map[string][]memEvent{}
	}
	for i := range events {
		e := events[i]
		at := nanos(e.At)
		exp := expiry(at, ttl)
		if expired(exp, now) {
			continue // never to be read: it would only take an unexpired one's place
		}
		e.At = time.Unix(0, at).UTC() // as DynamoDB gives it back: no monotonic reading, no zone
		e.Params = clone(e.Params)
		kept := m.topics[e.Topic]
		j, found := slices.BinarySearchFunc(kept, at, func(k memEvent, at int64) int { return compare(k, at, e.ID) })
		if found {
			kept[j] = memEvent{at: at, exp: exp, e: e} // the same item written again, as in the table
			continue
		}
		kept = slices.Insert(kept, j, memEvent{at: at, exp: exp, e: e})
		if over := len(kept) - bound; over > 0 {
			kept = slices.Delete(kept, 0, over)
		}
		m.topics[e.Topic] = kept
	}
	if now.Sub(m.swept) >= min(sweepEvery, ttl) {
		m.swept = now
		for topic := range m.topics {
			m.prune(topic, now)
		}
	} else {
		for i := range events {
			m.prune(events[i].Topic, now)
		}
	}
	return nil
}

// prune drops topic's expired events, and forgets the topic when none is
// left; m.mu is held. Expiry follows At, so the expired are the first.
func (m *Memory) prune(topic string, now time.Time) {
	kept := m.topics[topic]
	n := 0
	for n < len(kept) && expired(kept[n].exp, now) {
		n++
	}
	switch {
	case n == len(kept):
		delete(m.topics, topic)
	case n > 0:
		m.topics[topic] = slices.Delete(kept, 0, n)
	}
}

// Read implements stateless.EventLog: topic's events at or after since,
// in the order of their At and then their ID, at most limit of them
// (DefaultReadLimit when limit is not positive), those past their TTL
// left out. It is consistent: an Append that returned is read. The
// events' params are copies.
func (m *Memory) Read(ctx context.Context, topic string, since time.Time, limit int) ([]stateless.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("events: reading: %w", err)
	}
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	now, from := m.now(), nanos(since)
	m.mu.RLock()
	defer m.mu.RUnlock()
	kept := m.topics[topic]
	i, _ := slices.BinarySearchFunc(kept, from, func(k memEvent, at int64) int { return compare(k, at, "") })
	var out []stateless.Event
	for ; i < len(kept) && len(out) < limit; i++ {
		if expired(kept[i].exp, now) {
			continue
		}
		e := kept[i].e
		e.Params = clone(e.Params)
		out = append(out, e)
	}
	return out, nil
}

// RecordCatalog implements stateless.EventLog.
func (m *Memory) RecordCatalog(ctx context.Context, digests map[string]string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("events: recording the catalogs: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.catalogs == nil {
		m.catalogs = map[string]string{}
	}
	var changed []string
	for _, name := range slices.Sorted(maps.Keys(digests)) {
		if old, had := m.catalogs[name]; had && old != digests[name] {
			changed = append(changed, name)
		}
		m.catalogs[name] = digests[name]
	}
	return changed, nil
}

// clone copies params, keeping nil nil (no params) and empty empty.
func clone(p json.RawMessage) json.RawMessage {
	if p == nil {
		return nil
	}
	return append(json.RawMessage{}, p...)
}
