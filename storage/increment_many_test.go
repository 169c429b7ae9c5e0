package storage_test

import (
	"context"
	"math"
	"testing"

	"countersvc/counters"
	"countersvc/internal/apptest"
	"countersvc/internal/testenv"
)

func TestIncrementManyReturnsEachCountersNewValue(t *testing.T) {
	s, _ := mustOpenStore(t)
	ctx := context.Background()
	set(t, s, "b", 10)
	got, err := s.IncrementMany(ctx, []counters.Delta{{Name: "c", By: 3}, {Name: "b", By: -4}, {Name: "a'; --", By: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{3, 6, 0}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("IncrementMany = %v, want %v", got, want)
	}
	if v := value(t, s, "b"); v != 6 {
		t.Fatalf("stored b = %d, want 6", v)
	}
}

// A refused multi-counter increment changes nothing and leaves no open
// transaction behind on its connection: the next statement on that same
// connection (the pool has one) commits for everyone to see.
func TestRefusedIncrementManyChangesNothingAndLeavesTheConnectionClean(t *testing.T) {
	dsn := testenv.MySQLDSN(t)
	s, db := apptest.OpenStore(t, dsn)
	db.SetMaxOpenConns(1)
	ctx := context.Background()
	set(t, s, "top", math.MaxInt64)
	set(t, s, "low", 1)
	if _, err := s.IncrementMany(ctx, []counters.Delta{{Name: "low", By: 1}, {Name: "top", By: 1}}); counters.ErrorCode(err) != counters.EOUTOFRANGE {
		t.Fatalf("IncrementMany = %v, want out_of_range", err)
	}
	if v := value(t, s, "low"); v != 1 {
		t.Fatalf("low = %d, want unchanged 1", v)
	}
	if _, err := s.Increment(ctx, "after", 1); err != nil {
		t.Fatal(err)
	}
	other, _ := apptest.OpenStore(t, dsn)
	if v := value(t, other, "after"); v != 1 {
		t.Fatalf("another connection sees after = %d, want 1 (committed)", v)
	}
}
