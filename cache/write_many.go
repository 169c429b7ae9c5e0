package cache

import (
	"context"

	"github.com/redis/go-redis/v9"

	"countersvc/counters"
)

// The writes below touch several counters, or run inside their own
// transaction in the store: each invalidates every counter it names after
// the store has answered, success or not (a failure may still have
// committed, e.g. a timeout after the COMMIT was sent).

// Batch implements counters.Store.
func (s *Store) Batch(ctx context.Context, items []counters.Increment) ([]int64, error) {
	values, err := s.next.Batch(ctx, items)
	s.invalidateItems(ctx, items)
	return values, err
}

// IncrementOnce implements counters.Store.
func (s *Store) IncrementOnce(ctx context.Context, key counters.Idempotency, name string, by int64, render counters.RenderValue) (counters.Answer, error) {
	a, err := s.next.IncrementOnce(ctx, key, name, by, render)
	s.invalidate(ctx, name)
	return a, err
}

// SetOnce implements counters.Store.
func (s *Store) SetOnce(ctx context.Context, key counters.Idempotency, req counters.SetRequest, render counters.RenderSet) (counters.Answer, error) {
	a, err := s.next.SetOnce(ctx, key, req, render)
	s.invalidate(ctx, req.Name)
	return a, err
}

// BatchOnce implements counters.Store.
func (s *Store) BatchOnce(ctx context.Context, key counters.Idempotency, items []counters.Increment, render counters.RenderBatch) (counters.Answer, error) {
	a, err := s.next.BatchOnce(ctx, key, items, render)
	s.invalidateItems(ctx, items)
	return a, err
}

// IncrementMany implements counters.MultiIncrementer when the store below
// does, so that coalesced increments of many counters still share a commit
// with the cache in front.
func (s *Store) IncrementMany(ctx context.Context, deltas []counters.Delta) ([]int64, error) {
	multi, ok := s.next.(counters.MultiIncrementer)
	if !ok {
		return nil, counters.ErrMultiUnsupported
	}
	values, err := multi.IncrementMany(ctx, deltas)
	names := make([]string, len(deltas))
	for i, d := range deltas {
		names[i] = d.Name
	}
	s.invalidateMany(ctx, names)
	return values, err
}

func (s *Store) invalidateItems(ctx context.Context, items []counters.Increment) {
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.Name
	}
	s.invalidateMany(ctx, names)
}

// invalidateMany is invalidate for many names in one pipelined round trip.
// A name whose invalidation is not confirmed is distrusted, as in invalidate.
func (s *Store) invalidateMany(ctx context.Context, names []string) {
	seen := make(map[string]bool, len(names))
	var todo []string
	for _, n := range names {
		if !seen[n] && !counters.IsReserved(n) {
			seen[n] = true
			todo = append(todo, n)
		}
	}
	if len(todo) <= 1 {
		for _, n := range todo {
			s.invalidate(ctx, n)
		}
		return
	}
	failed := todo
	s.do(changeCtx(ctx), "invalidate", func(ctx context.Context) error {
		cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, n := range todo {
				// EVAL, not EVALSHA: a pipeline cannot fall back on NOSCRIPT.
				invalidateScript.Eval(ctx, p, []string{s.keys.counter(n)}, s.tokens.next(), s.ttlMillis())
			}
			return nil
		})
		failed = nil
		for i, c := range cmds {
			if c.Err() != nil {
				failed = append(failed, todo[i])
			}
		}
		if len(cmds) != len(todo) {
			failed = todo
		}
		return err
	})
	for _, n := range failed {
		s.distrustName(n)
	}
}

var _ counters.MultiIncrementer = (*Store)(nil)
