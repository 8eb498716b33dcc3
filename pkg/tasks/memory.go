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
//
// No one caller can fill it: each caller (its quota key, Record.Quota or
// the principal) may hold at most its share of each bound (1/Shares of
// the tasks and of the bytes). A caller at its share is refused with
// ErrShare — RateLimited, its own refusal — while the others go on. When
// the store is full though the caller is under its share, ended tasks of
// the caller that holds the most are forgotten first, oldest first, to
// make room: an ended task is a result that caller left unread.
type Memory struct {
	mu      sync.Mutex
	records map[string]memoryRecord
	opts    MemoryOptions
	// held is the bytes the live records hold (see Memory).
	held int
	// shares are what each caller holds.
	shares map[string]*share
	now    func() time.Time
}

// share is what one caller holds of a Memory store.
type share struct{ tasks, bytes int }

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
	// Shares is how many equal shares of each bound there are: one
	// caller holds at most MaxTasks/Shares tasks and MaxBytes/Shares
	// bytes. Default DefaultShares; 1 lets one caller fill the store.
	Shares int
}

// The bounds of a Memory store made with NewMemory: 10,000 tasks and
// 256 MiB, which is at least 682 tasks running at once.
const (
	DefaultMaxTasks = 10_000
	DefaultMaxBytes = 256 << 20
	// DefaultShares makes a caller's share 1,250 tasks and 32 MiB (85
	// tasks running at once), far above a live-task quota's default.
	DefaultShares = 8
)

// ErrFull is wrapped in the error of a Memory store's Create when the new
// task does not fit in its bounds.
var ErrFull = errors.New("tasks: the memory store is full")

// ErrShare is wrapped in the error of a Memory store's Create when the
// new task's caller holds its share of the store's bounds.
var ErrShare = errors.New("tasks: the caller holds its share of the memory store")

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
	if opts.Shares <= 0 {
		opts.Shares = DefaultShares
	}
	return &Memory{records: map[string]memoryRecord{}, shares: map[string]*share{}, opts: opts, now: time.Now}
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
	key := quotaKey(rec)
	if !m.withinShare(key, r.held) {
		m.sweep(now)
		if !m.withinShare(key, r.held) {
			tasks, bytes := m.shareBounds()
			return fmt.Errorf("tasks: the caller holds %d of its %d tasks and %d of its %d bytes: %w",
				m.shareOf(key).tasks, tasks, m.shareOf(key).bytes, bytes, ErrShare)
		}
	}
	if !m.fits(r.held) {
		m.sweep(now)
		for !m.fits(r.held) {
			if !m.forgetHoggedEnded(key) {
				break
			}
		}
		if !m.fits(r.held) {
			return fmt.Errorf("tasks: %d live tasks hold %d bytes of at most %d tasks and %d bytes: %w",
				len(m.records), m.held, m.opts.MaxTasks, m.opts.MaxBytes, ErrFull)
		}
	}
	m.records[rec.ID] = r
	m.add(key, 1, r.held)
	return nil
}

func (m *Memory) fits(held int) bool {
	return len(m.records) < m.opts.MaxTasks && m.held+held <= m.opts.MaxBytes
}

// shareBounds are the tasks and bytes one caller may hold: its share of
// each bound, and room for at least one task of the largest size.
func (m *Memory) shareBounds() (tasks, bytes int) {
	return max(1, m.opts.MaxTasks/m.opts.Shares), max(MaxRecordBytes, m.opts.MaxBytes/m.opts.Shares)
}

// withinShare reports whether key may hold one more task of held bytes.
// With one share, the caller's share is the store, whose bounds Create
// checks as such.
func (m *Memory) withinShare(key string, held int) bool {
	if m.opts.Shares == 1 {
		return true
	}
	sh := m.shareOf(key)
	tasks, bytes := m.shareBounds()
	return sh.tasks < tasks && sh.bytes+held <= bytes
}

func (m *Memory) shareOf(key string) share {
	if sh := m.shares[key]; sh != nil {
		return *sh
	}
	return share{}
}

// add counts tasks and bytes to key's share and to the store's bytes.
func (m *Memory) add(key string, tasks, bytes int) {
	m.held += bytes
	sh := m.shares[key]
	if sh == nil {
		sh = &share{}
		m.shares[key] = sh
	}
	sh.tasks += tasks
	sh.bytes += bytes
	if sh.tasks <= 0 {
		delete(m.shares, key)
	}
}

// forgetHoggedEnded forgets the oldest ended task of the caller, other
// than key, that holds the most tasks among those that hold an ended one;
// it reports whether it forgot one.
func (m *Memory) forgetHoggedEnded(key string) bool {
	oldest := map[string]*Record{} // caller -> its oldest ended task
	for _, r := range m.records {
		k := quotaKey(r.rec)
		if k == key || !r.rec.Status.Terminal() {
			continue
		}
		if o := oldest[k]; o == nil || r.rec.UpdatedAt.Before(o.UpdatedAt) || r.rec.UpdatedAt.Equal(o.UpdatedAt) && r.rec.ID < o.ID {
			oldest[k] = r.rec
		}
	}
	hog, most := "", -1
	for k := range oldest {
		if n := m.shareOf(k).tasks; n > most || n == most && k < hog {
			hog, most = k, n
		}
	}
	if most < 0 {
		return false
	}
	m.forget(oldest[hog].ID)
	return true
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
	m.add(quotaKey(r.rec), 0, next.held-r.held)
	m.records[rec.ID] = next
	return nil
}

// forget drops the record with id.
func (m *Memory) forget(id string) {
	r := m.records[id]
	m.add(quotaKey(r.rec), -1, -r.held)
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
