package cache

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// maxRepairBackoff bounds the wait between repair attempts while Redis
// keeps failing.
const maxRepairBackoff = time.Second

func (s *Store) distrustName(name string) {
	s.distrusted(s.distrust.markName(name))
}

func (s *Store) distrustPrefix(prefix string) {
	s.distrusted(s.distrust.markPrefix(prefix))
}

func (s *Store) distrusted(all bool) {
	if all {
		s.o.Log.Warn("redis cache: invalidations unconfirmed, reading every counter from MySQL until Redis is flushed")
	}
	s.nudge()
}

func (s *Store) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// repairLoop invalidates distrusted entries until Redis confirms it. It
// waits for a nudge while all is well and backs off while Redis fails.
func (s *Store) repairLoop() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var backoff time.Duration
	for {
		var retry <-chan time.Time
		if backoff > 0 {
			retry = time.After(backoff)
		}
		select {
		case <-s.stop:
			// One last attempt, so that other processes do not keep
			// entries this one could not invalidate.
			last, cancel := context.WithTimeout(ctx, flushBudget*s.o.Timeout)
			s.repair(last)
			cancel()
			return
		case <-retry:
		case <-s.wake:
			if backoff > 0 {
				continue // failing: wait for the backoff, not for every write
			}
		}
		if s.repair(ctx) {
			backoff = 0
		} else {
			backoff = min(max(2*backoff, s.o.Timeout), maxRepairBackoff)
		}
	}
}

// repair invalidates everything distrusted and lifts the marks it covered.
// It reports false when Redis failed, true when nothing is left to do (or a
// nudge is pending for marks that arrived meanwhile).
func (s *Store) repair(ctx context.Context) bool {
	names, prefixes, upto := s.distrust.snapshot()
	if len(names)+len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		if err := s.flush(ctx, p); err != nil {
			return false
		}
		s.distrust.clearPrefix(p, upto)
	}
	for _, n := range names {
		if !s.distrust.covers(n) {
			continue // lifted by a prefix flush above
		}
		if err := s.invalidateKey(ctx, n); err != nil {
			return false
		}
		s.distrust.clearName(n, upto)
	}
	if s.distrust.size() == 0 {
		s.o.Log.Info("redis cache: unconfirmed invalidations repaired", "names", len(names), "prefixes", len(prefixes))
	}
	return true
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
