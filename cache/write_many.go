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
		var err error
		failed, err = s.invalidatePipelined(ctx, todo, false)
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			// Redis lost its scripts (a restart, SCRIPT FLUSH): EVAL
			// sends the body along and loads it again for next time.
			failed, err = s.invalidatePipelined(ctx, failed, true)
		}
		return err
	})
	for _, n := range failed {
		s.distrustName(n)
	}
}

// invalidatePipelined runs invalidateScript on every name in one pipeline,
// by its SHA1 unless eval (a pipeline cannot fall back on NOSCRIPT by
// itself): sending the body for every key would cost Redis a hash of it
// each time. It returns the names not confirmed and the first error.
func (s *Store) invalidatePipelined(ctx context.Context, names []string, eval bool) ([]string, error) {
	token, ttl := s.tokens.next(), s.ttlMillis()
	cmds, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, n := range names {
			// One token for the whole write: generations only need to be
			// new for each key, and this one was never handed out before.
			if eval {
				invalidateScript.Eval(ctx, p, []string{s.keys.counter(n)}, token, ttl)
			} else {
				invalidateScript.EvalSha(ctx, p, []string{s.keys.counter(n)}, token, ttl)
			}
		}
		return nil
	})
	if len(cmds) != len(names) {
		return names, err
	}
	var failed []string
	for i, c := range cmds {
		if c.Err() != nil {
			failed = append(failed, names[i])
		}
	}
	return failed, err
}

var _ counters.MultiIncrementer = (*Store)(nil)
