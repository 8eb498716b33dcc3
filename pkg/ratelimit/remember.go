package ratelimit

import (
	"sync"
	"time"
)

// memo is what an instance remembers of what it saw, each thing until a
// time of its own: a window used up (Limiter), a caller's slots found
// full (DynamoDBSlots). It is bounded by a number of things, not by the
// callers it meets: at the bound the lapsed things are forgotten, and if
// none has lapsed a new one is not remembered (the instance asks the
// table again, as if it had never seen it).
type memo[K comparable] struct {
	mu    sync.Mutex
	until map[K]time.Time
}

// has reports whether k is remembered at now.
func (m *memo[K]) has(k K, now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.until[k]
	return ok && now.Before(t)
}

// keep remembers k until until, among at most max things.
func (m *memo[K]) keep(k K, until, now time.Time, max int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.until == nil {
		m.until = map[K]time.Time{}
	}
	if len(m.until) >= max {
		for k, t := range m.until {
			if !now.Before(t) {
				delete(m.until, k)
			}
		}
		if len(m.until) >= max {
			return
		}
	}
	m.until[k] = until
}

// forget forgets k.
func (m *memo[K]) forget(k K) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.until, k)
}
