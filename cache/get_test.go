package cache_test

import (
	"context"
	"testing"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/counters"
)

func ptr(v int64) *int64 { return &v }

func TestRepeatReadsAreServedFromRedisUnchanged(t *testing.T) {
	t.Parallel()
	st := newStack(t, cache.Options{})
	ctx := context.Background()
	tests := []struct {
		name string
		req  counters.SetRequest
	}{
		{"unbounded", counters.SetRequest{Name: "books/Red Horse Hill", Value: 43}},
		{"negative", counters.SetRequest{Name: "refunds", Value: -9223372036854775808}},
		{"bounded", counters.SetRequest{Name: "stock/Red Horse Hill", Value: 12, Min: counters.Bound{Value: ptr(0)}, Max: counters.Bound{Value: ptr(100)}}},
		{"min only", counters.SetRequest{Name: "Index.html", Value: 9223372036854775807, Min: counters.Bound{Value: ptr(-5)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := st.svc.Set(ctx, tt.req); err != nil {
				t.Fatal(err)
			}
			first := st.get(t, tt.req.Name)
			reads := st.mysql.gets.Load()
			for range 3 {
				again := st.get(t, tt.req.Name)
				if !sameCounter(again, first) {
					t.Fatalf("cached %+v, MySQL gave %+v", again, first)
				}
			}
			if got := st.mysql.gets.Load() - reads; got != 0 {
				t.Fatalf("repeat reads reached MySQL %d times, want 0", got)
			}
		})
	}
	if st.metric(t, "counters_cache_hits_total", "view=counter") < 12 {
		t.Fatalf("hits metric %v, want at least 12", st.metric(t, "counters_cache_hits_total", "view=counter"))
	}
}

func sameCounter(a, b *counters.Counter) bool {
	eq := func(x, y *int64) bool { return (x == nil && y == nil) || (x != nil && y != nil && *x == *y) }
	return a.Name == b.Name && a.Value == b.Value && eq(a.Min, b.Min) && eq(a.Max, b.Max) &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) &&
		a.CreatedAt.Location() == b.CreatedAt.Location()
}

func TestMissingCountersAreRememberedUntilCreated(t *testing.T) {
	t.Parallel()
	st := newStack(t, cache.Options{})
	ctx := context.Background()
	for range 3 {
		if _, err := st.svc.Get(ctx, "nobody"); counters.ErrorCode(err) != counters.ENOTFOUND {
			t.Fatalf("Get of a missing counter: %v, want not_found", err)
		}
	}
	if got := st.mysql.gets.Load(); got != 1 {
		t.Fatalf("MySQL reads %d, want 1", got)
	}
	st.increment(t, "nobody", 5)
	if got := st.get(t, "nobody").Value; got != 5 {
		t.Fatalf("after creating it, Get = %d, want 5", got)
	}
}

func TestEveryWriteIsVisibleToTheNextRead(t *testing.T) {
	t.Parallel()
	st := newStack(t, cache.Options{})
	ctx := context.Background()
	tests := []struct {
		name  string
		write func() error
		want  int64 // -1: not found
	}{
		{"increment", func() error { _, err := st.svc.Increment(ctx, "w/a", 2); return err }, 12},
		{"negative increment", func() error { _, err := st.svc.Increment(ctx, "w/a", -3); return err }, 7},
		{"set", func() error { _, _, err := st.svc.Set(ctx, counters.SetRequest{Name: "w/a", Value: 99}); return err }, 99},
		{"reset prefix", func() error {
			_, err := st.svc.Reset(ctx, counters.ResetRequest{Prefix: "w/", Value: 1})
			return err
		}, 1},
		{"reset all", func() error { _, err := st.svc.Reset(ctx, counters.ResetRequest{All: true, Value: 3}); return err }, 3},
		{"batch", func() error {
			_, err := st.svc.Batch(ctx, []counters.Increment{{Name: "w/a", By: 1}, {Name: "w/b", By: 1}})
			return err
		}, 11},
		{"idempotent increment", func() error {
			_, _, err := st.svc.IncrementOnce(ctx, counters.Idempotency{Key: "k1"}, "w/a", 5)
			return err
		}, 15},
		{"idempotent set", func() error {
			_, _, _, err := st.svc.SetOnce(ctx, counters.Idempotency{Key: "k2"}, counters.SetRequest{Name: "w/a", Value: 4})
			return err
		}, 4},
		{"idempotent batch", func() error {
			_, _, err := st.svc.BatchOnce(ctx, counters.Idempotency{Key: "k3"}, []counters.Increment{{Name: "w/a", By: 6}})
			return err
		}, 16},
		{"a coalesced round", func() error {
			_, err := st.cache.Backend().Store.IncrementMany(ctx, []counters.Increment{{Name: "w/a", By: 8}, {Name: "w/c", By: 1}})
			return err
		}, 18},
		{"import in chunks", func() error { return importLines(ctx, st, counters.ImportOverwrite, false, "w/a", 21) }, 21},
		{"import at once", func() error { return importLines(ctx, st, counters.ImportOverwrite, true, "w/a", 22) }, 22},
		{"delete", func() error { return st.svc.Delete(ctx, "w/a") }, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := st.svc.Set(ctx, counters.SetRequest{Name: "w/a", Value: 10}); err != nil {
				t.Fatal(err)
			}
			st.get(t, "w/a")
			st.get(t, "w/a") // now surely cached
			if err := tt.write(); err != nil {
				t.Fatal(err)
			}
			c, err := st.svc.Get(ctx, "w/a")
			switch {
			case tt.want < 0 && counters.ErrorCode(err) != counters.ENOTFOUND:
				t.Fatalf("after %s: %v %v, want not_found", tt.name, c, err)
			case tt.want >= 0 && (err != nil || c.Value != tt.want):
				t.Fatalf("after %s: %v %v, want %d", tt.name, c, err, tt.want)
			}
		})
	}
}

// importLines imports name at value, in chunks or atomically.
func importLines(ctx context.Context, st *stack, mode counters.ImportMode, atomic bool, name string, value int64) error {
	lines := func(yield func(counters.ImportLine) bool) {
		yield(counters.ImportLine{Line: 1, Counter: counters.Counter{Name: name, Value: value}})
	}
	_, err := st.cache.Backend().Imports.Import(ctx, counters.ImportOptions{Mode: mode, Atomic: atomic}, lines)
	return err
}

// A write that fails may still have committed (a timeout after the COMMIT
// was sent): its counter's entry is dropped all the same, so the next read
// shows what the database holds.
func TestAFailedWriteThatMayHaveCommittedDropsItsEntry(t *testing.T) {
	t.Parallel()
	st := newStack(t, cache.Options{})
	ctx := context.Background()
	st.increment(t, "unsure", 1)
	st.get(t, "unsure")
	st.get(t, "unsure") // now surely cached
	st.mysql.failIncrement = func(ctx context.Context, name string, by int64) {
		if _, err := st.db.ExecContext(ctx, "UPDATE counter SET value = value + ? WHERE name = ?", by, name); err != nil {
			t.Error(err)
		}
	}
	if _, err := st.svc.Increment(ctx, "unsure", 5); counters.ErrorCode(err) != counters.EUNAVAILABLE {
		t.Fatalf("Increment = %v, want unavailable", err)
	}
	if got := st.get(t, "unsure").Value; got != 6 {
		t.Fatalf("Get after the failed write = %d, want the 6 it committed", got)
	}
}

func TestReservedNamesAreAlwaysReadFromMySQL(t *testing.T) {
	t.Parallel()
	st := newStack(t, cache.Options{})
	ctx := context.Background()
	if _, err := st.mysql.Increment(ctx, "_board/7", 1); err != nil {
		t.Fatal(err)
	}
	st.get(t, "_board/7")
	// A consumer changes it in its own transaction, past the cache.
	if _, err := st.mysql.Increment(ctx, "_board/7", 1); err != nil {
		t.Fatal(err)
	}
	if got := st.get(t, "_board/7").Value; got != 2 {
		t.Fatalf("reserved counter read %d, want 2", got)
	}
	if n, err := st.raw.Exists(ctx, "counters:v1:c:_board/7").Result(); err != nil || n != 0 {
		t.Fatalf("reserved counter has a cache entry (%d, %v)", n, err)
	}
}

func TestInvalidateCoversWritesMadePastTheCache(t *testing.T) {
	t.Parallel()
	st := newStack(t, cache.Options{})
	ctx := context.Background()
	st.increment(t, "sales/books", 1)
	st.get(t, "sales/books")
	if _, err := st.mysql.Increment(ctx, "sales/books", 5); err != nil {
		t.Fatal(err)
	}
	st.cache.Invalidate(ctx, "sales/books")
	if got := st.get(t, "sales/books").Value; got != 6 {
		t.Fatalf("after Invalidate, Get = %d, want 6", got)
	}
}
