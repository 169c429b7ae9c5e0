package storage_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
)

// Retention removes every kind of stored history of the days before its
// horizon (counter_history's days, visitor sketches, the slots of counters
// idle since then), batch by batch, and nothing newer; no counter's value
// changes.
func TestRetentionRemovesHistoryBeforeTheHorizonOnly(t *testing.T) {
	t.Parallel()
	s, db := mustOpenStore(t)
	clock := testenv.NewClock(at.AddDate(0, 0, -10))
	s.Now = clock.Now
	ctx := context.Background()
	inc := func(name string, by int64) {
		t.Helper()
		if _, err := s.Increment(ctx, name, by); err != nil {
			t.Fatal(err)
		}
	}
	// Ten days ago: old/a changes in two quarters (the first moves from its
	// slot into counter_history), old/idle in one (it stays in the slot).
	inc("old/a", 2)
	clock.Set(clock.Now().Add(15 * time.Minute))
	inc("old/a", 3)
	inc("old/idle", 4)
	oldDay, _ := history.QuarterOf(clock.Now())
	if _, err := db.ExecContext(ctx, "INSERT INTO visitor_sketch (name, day, sketch) VALUES ('old/a', ?, 'x')", oldDay.Format(time.DateOnly)); err != nil {
		t.Fatal(err)
	}
	// Today: new/a, and old/a again.
	clock.Set(at)
	inc("new/a", 5)
	inc("old/a", 7)
	today, _ := history.QuarterOf(at)
	if _, err := db.ExecContext(ctx, "INSERT INTO visitor_sketch (name, day, sketch) VALUES ('new/a', ?, 'x')", today.Format(time.DateOnly)); err != nil {
		t.Fatal(err)
	}

	r := &history.Retention{Store: storage.HistoryOf(s), Age: 5 * 24 * time.Hour, Now: clock.Now, Batch: 1, Pause: time.Millisecond}
	removed, err := r.Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// old/a's day in counter_history, its sketch, old/idle's slot, and
	// old/a's slot of ten days ago was moved on by today's increment.
	if removed != 3 {
		t.Errorf("removed %d pieces, want 3", removed)
	}
	hs := storage.HistoryOf(s)
	for _, name := range []string{"old/a", "old/idle"} {
		days, err := hs.HistoryDays(ctx, name, "", oldDay, oldDay.AddDate(0, 0, 1))
		if err != nil || len(days) != 0 {
			t.Errorf("%s's history ten days ago: %v, %v; want none", name, days, err)
		}
	}
	for name, want := range map[string]int64{"old/a": 7, "new/a": 5} {
		days, err := hs.HistoryDays(ctx, name, "", today, today.AddDate(0, 0, 1))
		if err != nil || len(days) != 1 || sumOf(days[0]) != want {
			t.Errorf("%s's history today: %v, %v; want %d", name, days, err, want)
		}
	}
	for name, want := range map[string]int64{"old/a": 12, "old/idle": 4, "new/a": 5} {
		if got := value(t, s, name); got != want {
			t.Errorf("%s = %d after retention, want %d: values are never touched", name, got, want)
		}
	}
	var sketches int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM visitor_sketch").Scan(&sketches); err != nil || sketches != 1 {
		t.Errorf("%d visitor sketches left (%v), want today's 1", sketches, err)
	}
	if again, err := r.Pass(ctx); err != nil || again != 0 {
		t.Errorf("a second pass removed %d (%v), want 0", again, err)
	}
}

func sumOf(d history.UTCDay) int64 {
	var n int64
	for _, q := range d.Quarters {
		n += q
	}
	return n
}
