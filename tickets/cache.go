package tickets

import "sync"

// boardCache keeps boards by id. Boards never change once created (there is
// no endpoint that renames or deletes one), so an entry never goes stale and
// creating a ticket needs no board lookup in MySQL. If boards ever become
// mutable, this cache must learn about it.
type boardCache struct {
	mu  sync.RWMutex
	m   map[int64]Board
	max int
}

func newBoardCache(max int) *boardCache {
	return &boardCache{m: make(map[int64]Board), max: max}
}

// get returns a copy, so that callers cannot change the cached board.
func (c *boardCache) get(id int64) (*Board, bool) {
	c.mu.RLock()
	b, ok := c.m[id]
	c.mu.RUnlock()
	return &b, ok
}

// put forgets everything when the cache is full: simpler than an LRU, and a
// refill costs one primary-key lookup per board in use.
func (c *boardCache) put(b *Board) {
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[b.ID] = *b
	c.mu.Unlock()
}
