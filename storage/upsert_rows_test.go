package storage_test

import (
	"context"
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
	// One connection: the session's counts are the store's statements'.
	db, err := storage.Open(ctx, storetest.MigratedDSN(t), storage.Options{MaxOpenConns: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := storage.NewCounterStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
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
