package storage

import (
	"context"
	"sync"
)

// keyGate admits one request per idempotency key at a time into MySQL. The
// others of this process wait here rather than on the key's row lock, where
// each would hold a pooled connection until the first one ends: a client
// retrying one key in a loop could otherwise take every connection of the
// pool, and every other request with them.
type keyGate struct {
	mu   sync.Mutex
	held map[string]chan struct{} // closed when the key is let go
}

func newKeyGate() *keyGate { return &keyGate{held: map[string]chan struct{}{}} }

// enter waits until no other request of this process holds key, or until
// ctx ends. The caller must call the returned leave.
func (g *keyGate) enter(ctx context.Context, key string) (leave func(), err error) {
	for {
		g.mu.Lock()
		busy, ok := g.held[key]
		if !ok {
			mine := make(chan struct{})
			g.held[key] = mine
			g.mu.Unlock()
			return func() {
				g.mu.Lock()
				delete(g.held, key)
				g.mu.Unlock()
				close(mine)
			}, nil
		}
		g.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
