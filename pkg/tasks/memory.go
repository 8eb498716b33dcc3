package tasks

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Memory keeps tasks in this process, for local runs and tests. Records
// are stored encoded, as a shared store keeps them, so that no caller
// holds a record another can change. Expired tasks are forgotten; it
// holds at most MaxTasks live ones and refuses new tasks beyond that, as
// an unreachable store would, rather than forget a live one.
type Memory struct {
	mu       sync.Mutex
	records  map[string]memoryRecord
	maxTasks int
	now      func() time.Time
}

type memoryRecord struct {
	version   int64
	expiresAt time.Time
	body      []byte
}

// DefaultMaxTasks bounds a Memory store made with NewMemory.
const DefaultMaxTasks = 10_000

// NewMemory returns an empty store of up to DefaultMaxTasks tasks.
func NewMemory() *Memory { return NewMemoryWith(DefaultMaxTasks) }

// NewMemoryWith returns an empty store of up to maxTasks tasks.
func NewMemoryWith(maxTasks int) *Memory {
	return &Memory{records: map[string]memoryRecord{}, maxTasks: maxTasks, now: time.Now}
}

var _ stateless.TaskStore = (*Memory)(nil)

// Create implements stateless.TaskStore.
func (m *Memory) Create(ctx context.Context, rec *stateless.TaskRecord) error {
	body, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("tasks: encoding the task: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if r, ok := m.records[rec.ID]; ok && now.Before(r.expiresAt) {
		return stateless.ErrTaskExists
	}
	if len(m.records) >= m.maxTasks {
		m.sweep(now)
		if len(m.records) >= m.maxTasks {
			return fmt.Errorf("tasks: the memory store holds %d live tasks, its limit", len(m.records))
		}
	}
	m.records[rec.ID] = memoryRecord{version: rec.Version, expiresAt: rec.ExpiresAt, body: body}
	return nil
}

// Load implements stateless.TaskStore.
func (m *Memory) Load(ctx context.Context, id string) (*stateless.TaskRecord, error) {
	m.mu.Lock()
	r, ok := m.records[id]
	m.mu.Unlock()
	if !ok || !m.now().Before(r.expiresAt) {
		return nil, stateless.ErrNoTask
	}
	var rec stateless.TaskRecord
	if err := json.Unmarshal(r.body, &rec); err != nil {
		return nil, fmt.Errorf("tasks: decoding the task: %w", err)
	}
	return &rec, nil
}

// Replace implements stateless.TaskStore.
func (m *Memory) Replace(ctx context.Context, rec *stateless.TaskRecord, prev int64) error {
	body, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("tasks: encoding the task: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.records[rec.ID]
	switch {
	case !ok || !m.now().Before(r.expiresAt):
		return stateless.ErrNoTask
	case r.version != prev:
		return stateless.ErrTaskConflict
	}
	m.records[rec.ID] = memoryRecord{version: rec.Version, expiresAt: rec.ExpiresAt, body: body}
	return nil
}

// sweep forgets expired tasks.
func (m *Memory) sweep(now time.Time) {
	for id, r := range m.records {
		if !now.Before(r.expiresAt) {
			delete(m.records, id)
		}
	}
}
