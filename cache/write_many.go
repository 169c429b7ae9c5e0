package cache

import (
	"context"
	"iter"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"countersvc/counters"
)

// The writes below touch several counters, or run inside their own
// transaction in the store: each invalidates every counter it names after
// the store has answered, success or not (a failure may still have
// committed, e.g. a timeout after the COMMIT was sent).

// Batch implements counters.Store.
func (s *Store) Batch(ctx context.Context, items []counters.Increment) ([]int64, error) {
	values, err := s.next.Store.Batch(ctx, items)
	s.invalidateItems(ctx, items)
	return values, err
}

// IncrementOnce implements counters.Store.
func (s *Store) IncrementOnce(ctx context.Context, key counters.Idempotency, name string, by int64) (int64, bool, error) {
	v, replayed, err := s.next.Once.IncrementOnce(ctx, key, name, by)
	s.invalidate(ctx, name)
	return v, replayed, err
}

// SetOnce implements counters.Store.
func (s *Store) SetOnce(ctx context.Context, key counters.Idempotency, req counters.SetRequest) (*counters.Counter, bool, bool, error) {
	c, created, replayed, err := s.next.Once.SetOnce(ctx, key, req)
	s.invalidate(ctx, req.Name)
	return c, created, replayed, err
}

// BatchOnce implements counters.Store.
func (s *Store) BatchOnce(ctx context.Context, key counters.Idempotency, items []counters.Increment) ([]int64, bool, error) {
	values, replayed, err := s.next.Once.BatchOnce(ctx, key, items)
	s.invalidateItems(ctx, items)
	return values, replayed, err
}

// IncrementMany implements counters.Store.
func (s *Store) IncrementMany(ctx context.Context, incs []counters.Increment) ([]int64, error) {
	values, err := s.next.Store.IncrementMany(ctx, incs)
	s.invalidateItems(ctx, incs)
	return values, err
}

func (s *Store) invalidateItems(ctx context.Context, items []counters.Increment) {
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.Name
	}
	s.invalidateMany(ctx, names)
}

// invalidateMany is invalidate for many names in one round trip.
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
	keys := make([]string, len(todo))
	for i, n := range todo {
		keys[i] = s.keys.counter(n)
	}
	err := s.do(changeCtx(ctx), "invalidate", func(ctx context.Context) error {
		return s.deleteEntries(ctx, keys)
	})
	if err != nil {
		s.unconfirmed.Add(1)
	}
}

// deleteEntries invalidates many entries at once by deleting them, which is
// as safe as invalidateScript: a fill must find the generation its reader
// reserved, and a deleted entry has none. It costs the next reader of each
// one reserve round trip, and saves the write a script run per key, which is
// what a write of many counters can afford. One DEL names every key, except
// on a Cluster, where keys of different slots need a command each.
func (s *Store) deleteEntries(ctx context.Context, keys []string) error {
	if _, cluster := s.rdb.(*redis.ClusterClient); !cluster {
		return s.rdb.Del(ctx, keys...).Err()
	}
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(ctx, k)
		}
		return nil
	})
	return err
}

// Import implements counters.Store. It may change any counter its lines
// name, far too many to invalidate one by one, so afterwards it flushes
// every entry under the names' longest common prefix (all entries when
// they share none), as a reset does, success or not.
func (s *Store) Import(ctx context.Context, opts counters.ImportOptions, lines iter.Seq[counters.ImportLine]) (*counters.ImportReport, error) {
	var prefix string
	seen := false
	named := func(yield func(counters.ImportLine) bool) {
		for l := range lines {
			if l.Reason == "" && l.Err == nil {
				prefix, seen = commonPrefix(prefix, l.Counter.Name, seen), true
			}
			if !yield(l) {
				return
			}
		}
	}
	r, err := s.next.Imports.Import(ctx, opts, named)
	if seen && !r.Replayed {
		s.invalidatePrefix(ctx, prefix)
	}
	return r, err
}

// commonPrefix is the longest common prefix of p (the names so far, when
// seen) and name, cut back to whole UTF-8 characters, as the cache's key
// pattern needs.
func commonPrefix(p, name string, seen bool) string {
	if !seen {
		return name
	}
	n := 0
	for n < len(p) && n < len(name) && p[n] == name[n] {
		n++
	}
	for n > 0 && n < len(p) && !utf8.RuneStart(p[n]) {
		n--
	}
	return p[:n]
}
