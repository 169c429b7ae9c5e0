package storage_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/storage"
)

// forEachPath runs test against the store's ways of writing many
// counters: INSERT ... RETURNING (MariaDB) and the upsert plus SELECT in a
// transaction (servers without RETURNING, such as MySQL), each sent as one
// exchange and, as on a Galera node, a statement per round trip.
func forEachPath(t *testing.T, test func(t *testing.T, dsn string, open func(dsn string) (*storage.CounterStore, *storage.DB))) {
	for _, path := range []struct {
		name                 string
		returning, exchanges bool
	}{
		{"returning", true, true},
		{"in_transaction", false, true},
		{"returning_a_statement_per_round_trip", true, false},
		{"in_transaction_a_statement_per_round_trip", false, false},
	} {
		t.Run(path.name, func(t *testing.T) {
			open := func(dsn string) (*storage.CounterStore, *storage.DB) {
				s, db := storetest.OpenStore(t, dsn)
				if path.returning && !s.Returning {
					t.Skip("the server does not know INSERT ... RETURNING")
				}
				s.Returning, s.Exchanges = path.returning, path.exchanges
				return s, db
			}
			test(t, storetest.MigratedDSN(t), open)
		})
	}
}

func TestIncrementManyReturnsEachCountersNewValue(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, _ := open(dsn)
		ctx := context.Background()
		set(t, s, "b", 10)
		got, err := s.IncrementMany(ctx, []counters.Increment{{Name: "c", By: 3}, {Name: "b", By: -4}, {Name: "a'; --", By: 0}})
		if err != nil {
			t.Fatal(err)
		}
		if want := []int64{3, 6, 0}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
			t.Fatalf("IncrementMany = %v, want %v", got, want)
		}
		if v := value(t, s, "b"); v != 6 {
			t.Fatalf("stored b = %d, want 6", v)
		}
	})
}

// A refused multi-counter increment changes nothing and leaves no open
// transaction behind on its connection: the next statement on that same
// connection (the pool has one) commits for everyone to see.
func TestRefusedIncrementManyChangesNothingAndLeavesTheConnectionClean(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, db := open(dsn)
		ctx := context.Background()
		set(t, s, "top", math.MaxInt64)
		set(t, s, "low", 1)
		if _, _, err := s.Set(ctx, counters.SetRequest{Name: "bounded", Value: 5, Max: counters.Bound{Value: int64p(5)}}); err != nil {
			t.Fatal(err)
		}
		db.SetMaxOpenConns(1)
		for _, refused := range []string{"top", "bounded"} {
			_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "low", By: 1}, {Name: refused, By: 1}, {Name: "new", By: 1}})
			if counters.ErrorCode(err) != counters.EOUTOFRANGE {
				t.Fatalf("IncrementMany with %s = %v, want out_of_range", refused, err)
			}
		}
		if v := value(t, s, "low"); v != 1 {
			t.Fatalf("low = %d, want unchanged 1", v)
		}
		if _, err := s.Get(ctx, "new"); counters.ErrorCode(err) != counters.ENOTFOUND {
			t.Fatalf("Get(new) = %v, want not_found: the refused increment created it", err)
		}
		if _, err := s.Increment(ctx, "after", 1); err != nil {
			t.Fatal(err)
		}
		other, _ := open(dsn)
		if v := value(t, other, "after"); v != 1 {
			t.Fatalf("another connection sees after = %d, want 1 (committed)", v)
		}
	})
}

// Increments of many counters are padded up to the size of a prepared
// statement, or sent as text beyond the largest one, and one counter has
// a statement of its own: at every size each
// step applies once and each counter gets its own value back.
func TestIncrementManyOfEverySizeAppliesEachStepOnce(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, _ := open(dsn)
		ctx := context.Background()
		for _, n := range []int{1, 2, 5, 7, 33, 129, 300} {
			deltas := make([]counters.Increment, n)
			for i := range deltas {
				deltas[i] = counters.Increment{Name: fmt.Sprintf("size%d/%03d", n, n-i), By: int64(i + 1)}
			}
			for round := int64(1); round <= 2; round++ {
				got, err := s.IncrementMany(ctx, deltas)
				if err != nil {
					t.Fatalf("%d counters: %v", n, err)
				}
				for i, d := range deltas {
					if want := round * d.By; got[i] != want {
						t.Fatalf("%d counters, round %d: %s = %d, want %d", n, round, d.Name, got[i], want)
					}
				}
			}
			for _, d := range deltas {
				if v := value(t, s, d.Name); v != 2*d.By {
					t.Fatalf("%d counters: stored %s = %d, want %d", n, d.Name, v, 2*d.By)
				}
			}
		}
	})
}
