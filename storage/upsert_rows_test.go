package storage_test

import (
	"context"
	"math"
	"testing"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
)

// A hot counter's labelled round (one counter, its steps' labels in its
// label slot) changes its counter's row once: a padding row in its
// upsert changed it again (its updated_at moved on), rewriting the label
// slot the row carries, its undo and its redo, a second time.
func TestALabelledRoundOfOneCounterChangesItsRowOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := storetest.OpenStore(t, storetest.MigratedDSN(t))
	db.SetMaxOpenConns(1) // the session's counts are the store's statements'
	s.Count(storage.Labels(true, 0))
	s.Now = testenv.NewClock(at).Now
	round := func() {
		t.Helper()
		inc := counters.Increment{Name: "hot", By: 2, Parts: []counters.Part{
			{At: at, By: 1, Extra: breakdowns.Of(breakdowns.Labels{"channel": "web"})},
			{At: at, By: 1, Extra: breakdowns.Of(breakdowns.Labels{"channel": "app"})},
		}}
		if _, err := s.IncrementMany(ctx, []counters.Increment{inc}); err != nil {
			t.Fatal(err)
		}
	}
	updates := func() int64 {
		t.Helper()
		var name string
		var n int64
		if err := db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Handler_update'").Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	round() // creates the row
	before := updates()
	round()
	if got := updates() - before; got != 1 {
		t.Fatalf("a labelled round of one counter made %d row updates, want 1", got)
	}
	got, _ := breakdownOf(t, s, "hot", "", "channel")
	if got["web"] != 2 || got["app"] != 2 {
		t.Fatalf("the breakdown by channel is %v, want web 2 and app 2", got)
	}
}

// A write of one counter through IncrementMany (a hot counter's round)
// reads its new value from the OK packet: a new counter's, a value that
// goes below zero, a step of 0; and a bound or int64 refuses it with
// nothing changed, as it refuses a round of many.
func TestIncrementManyOfOneCounterReturnsItsValueOrRefuses(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, _ := open(dsn)
		ctx := context.Background()
		set(t, s, "ten", 10)
		set(t, s, "top", math.MaxInt64)
		if _, _, err := s.Set(ctx, counters.SetRequest{Name: "bounded", Value: 5, Max: counters.Bound{Value: int64p(5)}}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			by   int64
			want int64
			code string // the error's code; "": none
		}{
			{"new", 3, 3, ""},
			{"new", 4, 7, ""},
			{"ten", -14, -4, ""},
			{"zero", 0, 0, ""},
			{"bounded", 1, 5, counters.EOUTOFRANGE},
			{"top", 1, math.MaxInt64, counters.EOUTOFRANGE},
		} {
			got, err := s.IncrementMany(ctx, []counters.Increment{{Name: tc.name, By: tc.by}})
			if counters.ErrorCode(err) != tc.code {
				t.Fatalf("IncrementMany(%s by %d) = %v, want code %q", tc.name, tc.by, err, tc.code)
			}
			if err == nil && got[0] != tc.want {
				t.Fatalf("IncrementMany(%s by %d) = %d, want %d", tc.name, tc.by, got[0], tc.want)
			}
			if v := value(t, s, tc.name); v != tc.want {
				t.Fatalf("stored %s = %d after a step of %d, want %d", tc.name, v, tc.by, tc.want)
			}
		}
	})
}
