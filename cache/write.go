package cache

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/counters"
)

// The entries of the counters a write changed are dropped after the
// commit by the cache's observer of the change seam, once a round; a write
// that failed, which may still have committed (a timeout after the COMMIT
// was sent), drops them too (unsure): an extra invalidation costs one
// round trip. An invalidation that Redis does not confirm moves
// s.unconfirmed, and the write is answered only once its lease has run
// out (Backend, in lease.go), so that no read anywhere that starts after
// the answer can see what preceded the write.

// invalidator is the cache's observer of committed changes.
type invalidator struct{ s *Store }

var _ counters.PrefixObserver = invalidator{}

// Wants implements counters.Observer: every counter but the reserved ones,
// which are never cached (see Get).
func (i invalidator) Wants(name string) bool { return !counters.IsReserved(name) }

// Committed implements counters.Observer.
func (i invalidator) Committed(ctx context.Context, changes []counters.Change) {
	if len(changes) == 1 {
		i.s.invalidate(ctx, changes[0].Name)
		return
	}
	names := make([]string, len(changes))
	for j, c := range changes {
		names[j] = c.Name
	}
	i.s.invalidateMany(ctx, names)
}

// CommittedUnder implements counters.PrefixObserver: an import committed
// at once flushes every entry under its names' common prefix.
func (i invalidator) CommittedUnder(ctx context.Context, prefix string) {
	i.s.invalidatePrefix(ctx, prefix)
}

// unsure drops the entries of names when err says a write failed: it may
// have committed all the same.
func (s *Store) unsure(ctx context.Context, err error, names ...string) {
	if err != nil {
		s.invalidateMany(ctx, names)
	}
}

// Invalidate is for code that changes counters in MySQL without going
// through this Store (for example inside a transaction of its own): call it
// after the commit and before answering, and reads through this Store will
// not show what preceded the change. It waits out the lease itself when
// Redis does not confirm.
func (s *Store) Invalidate(ctx context.Context, names ...string) {
	before := s.unconfirmed.Load()
	for _, n := range names {
		s.invalidate(ctx, n)
	}
	if s.unconfirmed.Load() != before {
		s.outliveLease(time.Now(), opWrite)
	}
}

func (s *Store) invalidate(ctx context.Context, name string) {
	if counters.IsReserved(name) {
		return // never cached, see Get
	}
	if s.invalidateKey(changeCtx(ctx), s.keys.counter(name)) != nil {
		s.unconfirmed.Add(1)
	}
}

// invalidateKey gives the entry of key a new generation and drops its value.
func (s *Store) invalidateKey(ctx context.Context, key string) error {
	return s.do(ctx, "invalidate", func(ctx context.Context) error {
		return invalidateScript.Run(ctx, s.rdb, []string{key}, s.tokens.next(), s.leaseMillis()).Err()
	})
}

// flushBudget bounds, in Redis timeouts, how long a reset waits for its
// flush before it waits out the lease instead.
const flushBudget = 10

func (s *Store) invalidatePrefix(ctx context.Context, prefix string) {
	ctx, cancel := context.WithTimeout(changeCtx(ctx), flushBudget*s.o.Timeout)
	defer cancel()
	if err := s.flush(ctx, prefix); err != nil {
		s.unconfirmed.Add(1)
	}
}

// flush deletes the entry of every counter whose name starts with prefix.
// SCAN returns every key that exists from the start to the end of the
// iteration, and so every entry a reader reserved before the write
// committed: exactly the entries whose late fills could bring back old
// values. Deleting the generation with the entry refuses those fills.
func (s *Store) flush(ctx context.Context, prefix string) error {
	match := s.keys.counterPattern(prefix)
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
			return s.flushNode(ctx, c, match)
		})
	}
	return s.flushNode(ctx, s.rdb, match)
}

func (s *Store) flushNode(ctx context.Context, c redis.Cmdable, match string) error {
	var cursor uint64
	for {
		var keys []string
		err := s.do(ctx, "flush", func(ctx context.Context) error {
			var err error
			keys, cursor, err = c.Scan(ctx, cursor, match, 1000).Result()
			return err
		})
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			// One UNLINK per key: on a cluster node the keys of one batch
			// may live in different slots.
			err = s.do(ctx, "flush", func(ctx context.Context) error {
				_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
					for _, k := range keys {
						p.Unlink(ctx, k)
					}
					return nil
				})
				return err
			})
			if err != nil {
				return err
			}
		}
		if cursor == 0 {
			return nil
		}
	}
}
