package events

// MemoryTopics is how many topics m keeps, for tests of what it releases.
func MemoryTopics(m *Memory) int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.topics)
}
