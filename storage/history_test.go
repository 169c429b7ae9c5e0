package storage_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
)

// at is 2025-04-17 10:07 UTC, in quarter hour 40 of its UTC day.
var at = time.Date(2025, 4, 17, 10, 7, 0, 0, time.UTC)

// quarters reads name's history on the day of at: quarter -> count.
func quarters(tb testing.TB, s *storage.CounterStore, name string) map[int]int64 {
	tb.Helper()
	day, _ := history.QuarterOf(at)
	days, err := storage.HistoryOf(s).HistoryDays(context.Background(), name, "", day, day.AddDate(0, 0, 1))
	if err != nil {
		tb.Fatalf("HistoryDays(%q): %v", name, err)
	}
	got := map[int]int64{}
	for _, d := range days {
		for q, n := range d.Quarters {
			if n != 0 {
				got[q] = n
			}
		}
	}
	return got
}

func sameQuarters(a, b map[int]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Every kind of increment adds its step to the quarter hour of its commit,
// in its own transaction; sets, resets and bounds add nothing.
func TestEveryIncrementAddsItsStepToItsQuarterHour(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, _ := open(dsn)
		s.Now = testenv.NewClock(at).Now
		ctx := context.Background()
		key := func(k string) counters.Idempotency { return counters.Idempotency{Key: k, Fingerprint: [32]byte{1}} }
		tests := []struct {
			name    string
			counter string
			change  func() error
			want    map[int]int64
		}{
			{"single", "single", func() error { _, err := s.Increment(ctx, "single", 5); return err }, map[int]int64{40: 5}},
			{"negative", "negative", func() error { _, err := s.Increment(ctx, "negative", -3); return err }, map[int]int64{40: -3}},
			{"zero adds nothing", "zero", func() error { _, err := s.Increment(ctx, "zero", 0); return err }, map[int]int64{}},
			{"many", "many", func() error {
				_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "many", By: 2}, {Name: "other", By: 9}})
				return err
			}, map[int]int64{40: 2}},
			{"parts count at their own times", "parts", func() error {
				_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "parts", By: 3, Parts: []counters.Part{
					{At: at.Add(-15 * time.Minute), By: 1}, {At: at, By: 2}}}})
				return err
			}, map[int]int64{39: 1, 40: 2}},
			{"batch items, a name twice", "batch", func() error {
				_, err := s.Batch(ctx, []counters.Increment{{Name: "batch", By: 4}, {Name: "batch", By: -1}})
				return err
			}, map[int]int64{40: 3}},
			{"idempotent first attempt and its replay", "once", func() error {
				for range 2 {
					if _, _, err := s.IncrementOnce(ctx, key("once"), "once", 7); err != nil {
						return err
					}
				}
				return nil
			}, map[int]int64{40: 7}},
			{"idempotent batch", "batchonce", func() error {
				for range 2 {
					if _, _, err := s.BatchOnce(ctx, key("batch-once"), []counters.Increment{{Name: "batchonce", By: 6}}); err != nil {
						return err
					}
				}
				return nil
			}, map[int]int64{40: 6}},
			{"set, reset and bounds write none", "set", func() error {
				if _, _, err := s.Set(ctx, counters.SetRequest{Name: "set", Value: 100, Min: counters.Bound{Value: int64p(0)}}); err != nil {
					return err
				}
				_, err := s.Reset(ctx, counters.ResetRequest{Prefix: "se", Value: 3})
				return err
			}, map[int]int64{}},
		}
		for _, tc := range tests {
			if err := tc.change(); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := quarters(t, s, tc.counter); !sameQuarters(got, tc.want) {
				t.Errorf("%s: history %v, want %v", tc.name, got, tc.want)
			}
		}
	})
}

// A refused increment (overflow, bounds) adds no history, whichever way it
// was written.
func TestRefusedIncrementsAddNoHistory(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	s.Now = testenv.NewClock(at).Now
	ctx := context.Background()
	if _, _, err := s.Set(ctx, counters.SetRequest{Name: "stock", Value: 1, Min: counters.Bound{Value: int64p(0)}}); err != nil {
		t.Fatal(err)
	}
	set(t, s, "top", math.MaxInt64)
	tests := []struct {
		name   string
		change func() error
	}{
		{"below min", func() error { _, err := s.Increment(ctx, "stock", -2); return err }},
		{"overflow", func() error { _, err := s.Increment(ctx, "top", 1); return err }},
		{"many", func() error {
			_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "stock", By: -5}, {Name: "top", By: 1}})
			return err
		}},
		{"batch", func() error {
			_, err := s.Batch(ctx, []counters.Increment{{Name: "stock", By: 1}, {Name: "stock", By: -9}})
			return err
		}},
		{"idempotent", func() error {
			_, _, err := s.IncrementOnce(ctx, counters.Idempotency{Key: "k"}, "stock", -2)
			return err
		}},
	}
	for _, tc := range tests {
		if err := tc.change(); counters.ErrorCode(err) != counters.EOUTOFRANGE {
			t.Fatalf("%s: %v, want out_of_range", tc.name, err)
		}
	}
	for _, name := range []string{"stock", "top"} {
		if got := quarters(t, s, name); len(got) != 0 {
			t.Errorf("%s has history %v after refused increments", name, got)
		}
	}
}

// A quarter hour may hold more than an int64: the increments succeed, and a
// read that would have to show the sum says so instead of wrapping.
func TestAQuarterBeyondInt64NeverFailsAnIncrement(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	s.Now = testenv.NewClock(at).Now
	ctx := context.Background()
	set(t, s, "swing", math.MinInt64)
	for _, by := range []int64{math.MaxInt64, math.MaxInt64} {
		if _, err := s.Increment(ctx, "swing", by); err != nil {
			t.Fatalf("Increment(%d): %v", by, err)
		}
	}
	day, _ := history.QuarterOf(at)
	_, err := storage.HistoryOf(s).HistoryDays(ctx, "swing", "", day, day.AddDate(0, 0, 1))
	if counters.ErrorCode(err) != counters.EOUTOFRANGE {
		t.Fatalf("HistoryDays = %v, want out_of_range", err)
	}
}

// DELETE removes the counter's history with it: the name is unknown after.
func TestDeleteRemovesHistory(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	s.Now = testenv.NewClock(at).Now
	ctx := context.Background()
	if _, err := s.Increment(ctx, "gone", 3); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	day, _ := history.QuarterOf(at)
	if _, err := storage.HistoryOf(s).HistoryDays(ctx, "gone", "", day, day.AddDate(0, 0, 1)); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("HistoryDays after delete = %v, want not_found", err)
	}
	if err := s.Delete(ctx, "gone"); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("second delete = %v, want not_found", err)
	}
}

// A prefix's history sums its counters and only them; a counter without
// history in the range is known (empty), an unknown one is not found.
func TestPrefixHistorySumsItsCounters(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	s.Now = testenv.NewClock(at).Now
	ctx := context.Background()
	for name, by := range map[string]int64{"books/a": 2, "books/b": 5, "booksX": 100, "_books/x": 1000} {
		if _, err := s.Increment(ctx, name, by); err != nil {
			t.Fatal(err)
		}
	}
	day, q := history.QuarterOf(at)
	days, err := storage.HistoryOf(s).HistoryDays(ctx, "", "books/", day.AddDate(0, 0, -3), day.AddDate(0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 1 || days[0].Quarters[q] != 7 {
		t.Fatalf("prefix history %v, want 7 in quarter %d of one day", days, q)
	}
	if _, err := storage.HistoryOf(s).HistoryDays(ctx, "books/a", "", day.AddDate(0, 0, -9), day.AddDate(0, 0, -8)); err != nil {
		t.Errorf("a known counter's empty range: %v", err)
	}
	if _, err := storage.HistoryOf(s).HistoryDays(ctx, "books/none", "", day, day.AddDate(0, 0, 1)); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Errorf("an unknown counter: %v, want not_found", err)
	}
}

// With history off an increment is the single statement of old and writes
// no history.
func TestHistoryOffWritesNone(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	s.Now = testenv.NewClock(at).Now
	s.History = false
	ctx := context.Background()
	if _, err := s.Increment(ctx, "quiet", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IncrementMany(ctx, []counters.Increment{{Name: "quiet", By: 1}, {Name: "quieter", By: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := quarters(t, s, "quiet"); len(got) != 0 {
		t.Errorf("history %v with history off", got)
	}
}

// With history on, a single increment still returns the value its own
// upsert produced (LAST_INSERT_ID, from the OK packet) on the insert of a
// missing counter and on later updates, negative and zero steps included,
// and its history commits with the value: after every step the history
// sums to the value, and a refused step (bounds, overflow) writes neither.
func TestIncrementWithHistoryReturnsItsValueAndCommitsWithItsHistory(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, _ := open(dsn)
		incrementWithHistoryReturnsItsValueAndCommitsWithItsHistory(t, s)
	})
}

func incrementWithHistoryReturnsItsValueAndCommitsWithItsHistory(t *testing.T, s *storage.CounterStore) {
	if !s.History {
		t.Fatal("history is off by default")
	}
	s.Now = testenv.NewClock(at).Now
	ctx := context.Background()
	if _, _, err := s.Set(ctx, counters.SetRequest{Name: "bounded", Value: 0, Min: counters.Bound{Value: int64p(-2)}, Max: counters.Bound{Value: int64p(2)}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		counter   string
		by        int64
		want      int64 // the value after the step, refused or not
		wantErr   string
		wantQuart int64 // the history of quarter 40 after the step
	}{
		{"first increment inserts", "lid", 5, 5, "", 5},
		{"later increment updates", "lid", 3, 8, "", 8},
		{"negative step crosses zero", "lid", -10, -2, "", -2},
		{"zero step keeps value and adds nothing", "lid", 0, -2, "", -2},
		{"negative first increment", "neg", -7, -7, "", -7},
		{"step to the int64 minimum", "neg", math.MinInt64 + 7, math.MinInt64, "", math.MinInt64},
		{"overflow writes neither", "neg", -1, math.MinInt64, counters.EOUTOFRANGE, math.MinInt64},
		{"step within bounds", "bounded", 2, 2, "", 2},
		{"step beyond max writes neither", "bounded", 1, 2, counters.EOUTOFRANGE, 2},
		{"step below min writes neither", "bounded", -5, 2, counters.EOUTOFRANGE, 2},
		{"step down to min", "bounded", -4, -2, "", -2},
	}
	for _, tc := range tests {
		got, err := s.Increment(ctx, tc.counter, tc.by)
		if code := counters.ErrorCode(err); code != tc.wantErr {
			t.Fatalf("%s: error %q (%v), want %q", tc.name, code, err, tc.wantErr)
		}
		if err == nil && got != tc.want {
			t.Fatalf("%s: Increment = %d, want %d", tc.name, got, tc.want)
		}
		if v := value(t, s, tc.counter); v != tc.want {
			t.Fatalf("%s: stored value %d, want %d", tc.name, v, tc.want)
		}
		want := map[int]int64{40: tc.wantQuart}
		if tc.wantQuart == 0 {
			want = map[int]int64{}
		}
		if got := quarters(t, s, tc.counter); !sameQuarters(got, want) {
			t.Fatalf("%s: history %v, want %v", tc.name, got, want)
		}
	}
}
