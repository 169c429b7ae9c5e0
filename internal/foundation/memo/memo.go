// Package memo is the one bounded memory of answers: a map safe for
// concurrent use that starts over when it holds its bound of entries,
// for answers that are costly to find and cheap to find again (a crawler
// test per User-Agent, the labels of an agent). No eviction order to keep
// on every hit: real traffic comes back to a few thousand keys, and after
// a start over the memory fills again with those.
package memo

import "sync"

// Map remembers at most Max values, by key. The zero value is not usable:
// make one with New.
type Map[K comparable, V any] struct {
	max int

	mu sync.RWMutex
	m  map[K]V
}

// New returns a memory of at most max entries.
func New[K comparable, V any](max int) *Map[K, V] {
	return &Map[K, V]{max: max, m: make(map[K]V)}
}

// Get returns the value remembered for k, if any.
func (m *Map[K, V]) Get(k K) (V, bool) {
	m.mu.RLock()
	v, ok := m.m[k]
	m.mu.RUnlock()
	return v, ok
}

// Put remembers v for k, forgetting everything first when full.
func (m *Map[K, V]) Put(k K, v V) {
	m.mu.Lock()
	if len(m.m) >= m.max {
		clear(m.m)
	}
	m.m[k] = v
	m.mu.Unlock()
}

// Len is how many entries it holds.
func (m *Map[K, V]) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.m)
}
