package cache

import (
	"context"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/counters"
)

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
	// A reset of a large prefix drops each of its counters: in DELs of
	// at most deleteChunk keys.
	for chunk := range slices.Chunk(todo, deleteChunk) {
		keys := make([]string, len(chunk))
		for i, n := range chunk {
			keys[i] = s.keys.counter(n)
		}
		err := s.do(changeCtx(ctx), "invalidate", func(ctx context.Context) error {
			return s.deleteEntries(ctx, keys)
		})
		if err != nil {
			s.unconfirmed.Add(1)
			return
		}
	}
}

// deleteChunk is the most keys one DEL of invalidateMany names.
const deleteChunk = 1000

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
