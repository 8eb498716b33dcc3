package claims

import (
	"bytes"
	"context"
	"sync"
	"time"
)

// Memory is a Store in process memory, with the same semantics as the
// DynamoDB store: for local runs, and for tests that do not need a table.
// It holds claims for one process only.
type Memory struct {
	mu      sync.Mutex
	records map[string]*Record
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{records: map[string]*Record{}} }

// Claim implements Store.
func (m *Memory) Claim(ctx context.Context, c Claim, now time.Time) (bool, *Record, error) {
	if err := ctx.Err(); err != nil {
		return false, nil, errorsJoin(ErrUnavailable, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.records[c.Key]; ok && r.live(now) {
		cp := *r
		cp.Response = bytes.Clone(r.Response)
		return false, &cp, nil
	}
	m.records[c.Key] = &Record{Key: c.Key, Status: InProgress, Owner: c.Owner, LeaseUntil: c.LeaseUntil,
		Fingerprint: c.Fingerprint, ExpiresAt: c.ExpiresAt}
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
	if !ok || r.Owner != owner || r.Status != InProgress {
		return ErrNotOwner
	}
	r.Status, r.Response, r.Oversize, r.ExpiresAt = Completed, bytes.Clone(response), oversize, expiresAt
	return nil
}

// Release implements Store.
func (m *Memory) Release(ctx context.Context, key, owner string) error {
	if err := ctx.Err(); err != nil {
		return errorsJoin(ErrUnavailable, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[key]
	if !ok || r.Owner != owner || r.Status != InProgress {
		return ErrNotOwner
	}
	delete(m.records, key)
	return nil
}

var _ Store = (*Memory)(nil)
