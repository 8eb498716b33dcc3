package claims

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Memory is a Store in process memory, with the same semantics as the
// DynamoDB store: for local runs, and for tests that do not need a table.
// It holds claims for one process only.
//
// Its memory is bounded. A record whose expiry (Record.ExpiresAt, the
// table's TTL) has passed is forgotten: at once when its key is claimed
// again, and otherwise by a sweep that runs when the store has doubled
// since the last one (so it costs O(1) per claim, amortised; there is no
// goroutine to stop). The store holds at most MaxRecords records and
// MaxResponseBytes bytes of stored results (MemoryOptions).
//
// When it is full it fails closed, as when a table cannot be reached: it
// first drops every record that no longer holds its key (expired, or in
// progress with a lapsed lease — a key any caller could take over anyway),
// and if that frees nothing, a claim on a new key is refused with an error
// that wraps ErrUnavailable and ErrFull, so that the tool does not run and
// the caller is told to retry. It never drops a live record — an
// in-progress claim whose lease holds, or a completed one before its
// expiry — because the key's next call would then run the tool a second
// time. A completion that would take the stored results over
// MaxResponseBytes is kept as completed without its result (as Oversize):
// the key stays spent, and its retries are told the result is no longer
// available.
type Memory struct {
	mu      sync.Mutex
	records map[string]*Record
	opts    MemoryOptions
	// bytes is the total size of the stored responses.
	bytes int
	// sweepAt is the number of records at which the next sweep runs.
	sweepAt int
	// freeAt is a lower bound of the first instant at which some record
	// stops holding its key: before it, a full store has nothing to drop
	// and refuses without sweeping.
	freeAt time.Time
}

// MemoryOptions configure NewMemoryWith. The zero value takes the
// defaults.
type MemoryOptions struct {
	// MaxRecords caps the records held: claims in progress, completed
	// calls remembered for replay, redeemed request states. Default
	// DefaultMaxRecords.
	MaxRecords int
	// MaxResponseBytes caps the total size of the results kept for replay.
	// Default DefaultMaxResponseBytes.
	MaxResponseBytes int
}

// The defaults of MemoryOptions: with the Guard's default retention of 24
// hours, 10,000 records is a side-effecting call every 9 seconds for a day,
// for one process; the results kept are bounded at 32 MiB.
const (
	DefaultMaxRecords       = 10_000
	DefaultMaxResponseBytes = 32 << 20
)

// ErrFull is wrapped (with ErrUnavailable) in the error of a claim that a
// full Memory store refuses.
var ErrFull = errors.New("claims: memory store full")

// minSweep is the size below which the store does not sweep.
const minSweep = 64

// NewMemory returns an empty in-memory store with the default bounds.
func NewMemory() *Memory { return NewMemoryWith(MemoryOptions{}) }

// NewMemoryWith returns an empty in-memory store with the bounds o sets.
func NewMemoryWith(o MemoryOptions) *Memory {
	if o.MaxRecords <= 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	return &Memory{records: map[string]*Record{}, opts: o, sweepAt: min(minSweep, o.MaxRecords)}
}

// Claim implements Store.
func (m *Memory) Claim(ctx context.Context, c Claim, now time.Time) (bool, *Record, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, errorsJoin(ErrUnavailable, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.records[c.Key]; ok {
		if r.Owner == c.Owner && r.Status == StatusInProgress {
			return true, nil, nil // a retry of the claim that took it
		}
		if r.live(now) {
			cp := *r
			cp.Response = bytes.Clone(r.Response)
			return false, &cp, nil
		}
		// Expired or lapsed: the key is free, and the old record goes.
		m.drop(c.Key, r)
	}
	if len(m.records) >= m.sweepAt {
		m.sweep(now)
	}
	if len(m.records) >= m.opts.MaxRecords {
		return false, nil, fmt.Errorf("%w: %w: %d records, none of which can be dropped before %s",
			ErrUnavailable, ErrFull, len(m.records), m.freeAt.UTC().Format(time.RFC3339))
	}
	r := &Record{Key: c.Key, Status: StatusInProgress, Owner: c.Owner, LeaseUntil: c.LeaseUntil,
		Fingerprint: c.Fingerprint, ExpiresAt: c.ExpiresAt}
	m.records[c.Key] = r
	if t := droppableAt(r); t.Before(m.freeAt) {
		m.freeAt = t
	}
	return true, nil, nil
}

// Complete implements Store.
func (m *Memory) Complete(ctx context.Context, key, owner string, response []byte, oversize bool, expiresAt time.Time) error {
	if err := ctx.Err(); err != nil {
		return errorsJoin(ErrUnavailable, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[key]
	if !ok || r.Owner != owner {
		return ErrNotOwner
	}
	if r.Status == StatusCompleted {
		return nil // a retry: the first completion stands
	}
	if !oversize && m.bytes+len(response) > m.opts.MaxResponseBytes {
		// Over the budget: the call is remembered as done, its result
		// not kept.
		response, oversize = nil, true
	}
	if oversize {
		response = nil
	}
	r.Status, r.Response, r.Oversize, r.ExpiresAt = StatusCompleted, bytes.Clone(response), oversize, expiresAt
	m.bytes += len(r.Response)
	if t := droppableAt(r); t.Before(m.freeAt) {
		m.freeAt = t
	}
	return nil
}

// Commit implements Committer: the key taken and completed at once, with
// the writes' changes (each a Write.Apply, nested so that every one of
// them is made or none), under the store's lock. A full store refuses it
// as it refuses a claim.
func (m *Memory) Commit(ctx context.Context, _ string, c Claim, response []byte, oversize bool, writes []Write, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return errorsJoin(ErrUnavailable, err)
	}
	for i, w := range writes {
		if w.Apply == nil {
			return fmt.Errorf("claims: write %d is no change in memory", i+1)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.records[c.Key]; ok {
		if r.Owner == c.Owner && r.Status == StatusCompleted {
			return nil // a retry of the commit that made it
		}
		if r.live(now) {
			cp := *r
			cp.Response = bytes.Clone(r.Response)
			return &HeldError{Holder: &cp}
		}
		m.drop(c.Key, r)
	}
	if len(m.records) >= m.sweepAt {
		m.sweep(now)
	}
	if len(m.records) >= m.opts.MaxRecords {
		return fmt.Errorf("%w: %w: %d records, none of which can be dropped before %s",
			ErrUnavailable, ErrFull, len(m.records), m.freeAt.UTC().Format(time.RFC3339))
	}
	if oversize || m.bytes+len(response) > m.opts.MaxResponseBytes {
		response, oversize = nil, true
	}
	r := &Record{Key: c.Key, Status: StatusCompleted, Owner: c.Owner, Fingerprint: c.Fingerprint,
		Response: bytes.Clone(response), Oversize: oversize, ExpiresAt: c.ExpiresAt}
	return applyWrites(writes, func() {
		m.records[c.Key] = r
		m.bytes += len(r.Response)
		if t := droppableAt(r); t.Before(m.freeAt) {
			m.freeAt = t
		}
	})
}

// applyWrites makes the in-memory writes and then record, all or none:
// each write's Apply is given, as its commit, the rest of the chain, and
// makes its change only once that was made. The first write that refuses
// ends the chain, with nothing made.
func applyWrites(writes []Write, record func()) error {
	var chain func(i int) (bool, error)
	chain = func(i int) (bool, error) {
		if i == len(writes) {
			record()
			return true, nil
		}
		called, made := false, false
		var inner error
		err := writes[i].Apply(func() bool {
			if called {
				return made // asked twice: the answer stands
			}
			called = true
			made, inner = chain(i + 1)
			return made
		})
		switch {
		case made:
			return true, nil // an Apply that fails after its commit was made breaks its contract; the commit stands
		case inner != nil:
			return false, inner
		case err != nil:
			return false, &WriteRefusedError{Index: i, Err: err}
		}
		return false, &WriteRefusedError{Index: i, Err: errors.New("claims: the write's Apply neither committed nor refused")}
	}
	_, err := chain(0)
	return err
}

var _ Committer = (*Memory)(nil)

// Release implements Store.
func (m *Memory) Release(ctx context.Context, key, owner string) error {
	if err := ctx.Err(); err != nil {
		return errorsJoin(ErrUnavailable, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[key]
	if !ok || r.Owner != owner || r.Status != StatusInProgress {
		return ErrNotOwner
	}
	m.drop(key, r)
	return nil
}

// drop forgets one record.
func (m *Memory) drop(key string, r *Record) {
	m.bytes -= len(r.Response)
	delete(m.records, key)
}

// sweep drops the records that no longer hold their keys at now, and
// sets when the next sweep runs: when the store has doubled, or at once
// once it is full — unless nothing can be dropped yet (freeAt), which
// keeps a full store of live records from scanning on every claim.
func (m *Memory) sweep(now time.Time) {
	full := len(m.records) >= m.opts.MaxRecords
	if full && now.Before(m.freeAt) {
		return
	}
	next := time.Unix(math.MaxInt32, 0)
	for k, r := range m.records {
		// Expired records always go, as the table's TTL deletes them;
		// lapsed leases only when the store is full.
		if now.Unix() >= r.ExpiresAt.Unix() || full && !r.live(now) {
			m.drop(k, r)
			continue
		}
		if t := droppableAt(r); t.Before(next) {
			next = t
		}
	}
	m.freeAt = next
	m.sweepAt = min(max(2*len(m.records), minSweep), m.opts.MaxRecords)
}

// droppableAt is a lower bound of when r stops holding its key (see
// Record.live): its expiry to the second, or, in progress, its lease to
// the millisecond.
func droppableAt(r *Record) time.Time {
	t := time.Unix(r.ExpiresAt.Unix(), 0)
	if r.Status == StatusInProgress {
		if l := time.UnixMilli(r.LeaseUntil.UnixMilli()); l.Before(t) {
			t = l
		}
	}
	return t
}

var _ Store = (*Memory)(nil)
