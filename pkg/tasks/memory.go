package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Memory keeps tasks in this process, for local runs and tests. It keeps
// a deep copy of each record, so that no caller holds a record another
// can change.
//
// Its memory is bounded, by count and by bytes (MemoryOptions). A task
// that may still change (working or waiting for input) holds room for
// the largest record the server writes (MaxRecordBytes),
// so that it can always record its outcome; one that has ended holds its
// own size (StoredSize) until it expires. Expired tasks are forgotten.
// When a new task does not fit, the store first forgets expired ones,
// and then fails closed, as an unreachable store would: the error wraps
// ErrFull, and the call is refused retryably. It never forgets a live
// task to make room.
type Memory struct {
	mu      sync.Mutex
	records map[string]memoryRecord
	opts    MemoryOptions
	// held is the bytes the live records hold (see Memory).
	held int
	now  func() time.Time
}

type memoryRecord struct {
	rec  *Record
	held int
}

// MemoryOptions bound a Memory store; zero fields take the defaults.
type MemoryOptions struct {
	// MaxTasks caps the tasks held, ended ones included until they
	// expire. Default DefaultMaxTasks.
	MaxTasks int
	// MaxBytes caps the bytes the tasks hold. Default DefaultMaxBytes.
	MaxBytes int
}

// The bounds of a Memory store made with NewMemory: 10,000 tasks and
// 256 MiB, which is at least 682 tasks running at once.
const (
	DefaultMaxTasks = 10_000
	DefaultMaxBytes = 256 << 20
)

// ErrFull is wrapped in the error of a Memory store's Create when the new
// task does not fit in its bounds.
var ErrFull = errors.New("tasks: the memory store is full")

// NewMemory returns an empty store with the default bounds.
func NewMemory() *Memory { return NewMemoryWith(MemoryOptions{}) }

// NewMemoryWith returns an empty store with the bounds of opts.
func NewMemoryWith(opts MemoryOptions) *Memory {
	if opts.MaxTasks <= 0 {
		opts.MaxTasks = DefaultMaxTasks
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	return &Memory{records: map[string]memoryRecord{}, opts: opts, now: time.Now}
}

var _ Store = (*Memory)(nil)

// holds is the room a record takes in the store.
func holds(rec *Record) int {
	if rec.Status.Terminal() {
		return rec.StoredSize()
	}
	return max(rec.StoredSize(), MaxRecordBytes)
}

// Create implements Store.
func (m *Memory) Create(ctx context.Context, rec *Record) error {
	if n := rec.StoredSize(); n > MaxRecordBytes {
		return fmt.Errorf("tasks: a record of %d bytes: %w", n, ErrTooLarge)
	}
	r := memoryRecord{rec: clone(rec), held: holds(rec)}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if old, ok := m.records[rec.ID]; ok {
		if now.Before(old.rec.ExpiresAt) {
			return ErrExists
		}
		m.forget(rec.ID)
	}
	if !m.fits(r.held) {
		m.sweep(now)
		if !m.fits(r.held) {
			return fmt.Errorf("tasks: %d live tasks hold %d bytes of at most %d tasks and %d bytes: %w",
				len(m.records), m.held, m.opts.MaxTasks, m.opts.MaxBytes, ErrFull)
		}
	}
	m.records[rec.ID] = r
	m.held += r.held
	return nil
}

func (m *Memory) fits(held int) bool {
	return len(m.records) < m.opts.MaxTasks && m.held+held <= m.opts.MaxBytes
}

// Load implements Store.
func (m *Memory) Load(ctx context.Context, id string) (*Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[id]
	if !ok || !m.now().Before(r.rec.ExpiresAt) {
		return nil, ErrNoTask
	}
	return clone(r.rec), nil
}

// Replace implements Store. A record is replaced within the
// room it held: a live one's is the largest record, an ended one's
// cannot grow (the server changes no ended task).
func (m *Memory) Replace(ctx context.Context, rec *Record, prev int64) error {
	if n := rec.StoredSize(); n > MaxRecordBytes {
		return fmt.Errorf("tasks: a record of %d bytes: %w", n, ErrTooLarge)
	}
	next := memoryRecord{rec: clone(rec), held: holds(rec)}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[rec.ID]
	switch {
	case !ok || !m.now().Before(r.rec.ExpiresAt):
		return ErrNoTask
	case r.rec.Version != prev:
		return ErrConflict
	case next.held > r.held && m.held-r.held+next.held > m.opts.MaxBytes:
		return fmt.Errorf("tasks: an ended task cannot grow in a full store: %w", ErrFull)
	}
	m.held += next.held - r.held
	m.records[rec.ID] = next
	return nil
}

// forget drops the record with id.
func (m *Memory) forget(id string) {
	m.held -= m.records[id].held
	delete(m.records, id)
}

// sweep forgets expired tasks.
func (m *Memory) sweep(now time.Time) {
	for id, r := range m.records {
		if !now.Before(r.rec.ExpiresAt) {
			m.forget(id)
		}
	}
}

// clone returns a deep copy of rec, its times without monotonic readings,
// as a record read back from a shared store has them.
func clone(rec *Record) *Record {
	c := *rec
	c.CreatedAt, c.UpdatedAt, c.ExpiresAt, c.LeaseUntil = rec.CreatedAt.Round(0), rec.UpdatedAt.Round(0), rec.ExpiresAt.Round(0), rec.LeaseUntil.Round(0)
	c.Arguments, c.Capabilities, c.Result, c.Error = cloneRaw(rec.Arguments), cloneRaw(rec.Capabilities), cloneRaw(rec.Result), cloneRaw(rec.Error)
	c.State = bytes.Clone(rec.State)
	c.Responses, c.Requests = cloneRaws(rec.Responses), cloneRaws(rec.Requests)
	c.Asked = slices.Clone(rec.Asked)
	return &c
}

func cloneRaw(b json.RawMessage) json.RawMessage { return bytes.Clone(b) }

func cloneRaws(m map[string]json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		return nil
	}
	c := maps.Clone(m)
	for k, v := range c {
		c[k] = cloneRaw(v)
	}
	return c
}
