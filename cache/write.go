package cache

import (
	"context"

	"countersvc/counters"
)

// The write methods change MySQL first and invalidate the entry afterwards,
// whatever MySQL answered: an error may hide a change that was applied, and
// an extra invalidation costs one round trip. An invalidation that Redis does
// not confirm makes this process distrust the entry before the write is
// answered, so no later read here can see what preceded the write.

// Increment implements counters.Store.
func (s *Store) Increment(ctx context.Context, name string, by int64) (int64, error) {
	v, err := s.next.Increment(ctx, name, by)
	s.invalidate(ctx, name)
	return v, err
}

// Set implements counters.Store.
func (s *Store) Set(ctx context.Context, req counters.SetRequest) (*counters.Counter, bool, error) {
	c, created, err := s.next.Set(ctx, req)
	s.invalidate(ctx, req.Name)
	return c, created, err
}

// Delete implements counters.Store.
func (s *Store) Delete(ctx context.Context, name string) error {
	err := s.next.Delete(ctx, name)
	s.invalidate(ctx, name)
	return err
}

// Reset implements counters.Store. It does not know which counters it
// changed, so it flushes every entry under the prefix.
func (s *Store) Reset(ctx context.Context, req counters.ResetRequest) (int64, error) {
	n, err := s.next.Reset(ctx, req)
	prefix := req.Prefix
	if req.All {
		prefix = ""
	}
	s.invalidatePrefix(ctx, prefix)
	return n, err
}

// Invalidate is for code that changes counters in MySQL without going
// through this Store (for example inside a transaction of its own): call it
// after the commit and before answering, and reads through this Store will
// not show what preceded the change.
func (s *Store) Invalidate(ctx context.Context, names ...string) {
	for _, n := range names {
		s.invalidate(ctx, n)
	}
}

func (s *Store) invalidate(ctx context.Context, name string) {
	if counters.IsReserved(name) {
		return // never cached, see Get
	}
	if err := s.invalidateKey(changeCtx(ctx), name); err != nil {
		s.distrustName(name)
	}
}

func (s *Store) invalidateKey(ctx context.Context, name string) error {
	return s.do(ctx, "invalidate", func(ctx context.Context) error {
		return invalidateScript.Run(ctx, s.rdb, []string{s.keys.counter(name)}, s.tokens.next(), s.ttlMillis()).Err()
	})
}

// flushBudget bounds, in Redis timeouts, how long a reset waits for its
// flush before it leaves the rest to the repairer.
const flushBudget = 10

func (s *Store) invalidatePrefix(ctx context.Context, prefix string) {
	ctx, cancel := context.WithTimeout(changeCtx(ctx), flushBudget*s.o.Timeout)
	defer cancel()
	if err := s.flush(ctx, prefix); err != nil {
		s.distrustPrefix(prefix)
	}
}
