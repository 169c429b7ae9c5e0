package storage_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
)

// The hot increments keep their counter's current quarter in its row (the
// slot); a step of another quarter moves the slot into counter_history
// first. Whatever the order of quarters, reads give each quarter exactly,
// for the single increment and the round alike, on every path.
func TestHistoryKeepsEveryQuarterAcrossTheSlotsTurns(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, _ := open(dsn)
		clock := testenv.NewClock(at)
		s.Now = clock.Now
		ctx := context.Background()
		ways := []struct {
			name string
			inc  func(name string, by int64) error
		}{
			{"single", func(name string, by int64) error { _, err := s.Increment(ctx, name, by); return err }},
			{"many", func(name string, by int64) error {
				_, err := s.IncrementMany(ctx, []counters.Increment{{Name: name, By: by}, {Name: name + "/other", By: 1}})
				return err
			}},
		}
		// Quarter 40, 41 and back to 40 (a process whose clock is behind),
		// a step of 0 in between, then the next day.
		steps := []struct {
			at time.Duration // after at
			by int64
		}{{0, 5}, {15 * time.Minute, 2}, {16 * time.Minute, 1}, {20 * time.Minute, 0}, {0, 4}, {14 * time.Hour, 6}}
		for _, w := range ways {
			t.Run(w.name, func(t *testing.T) {
				name := "turns/" + w.name
				for _, st := range steps {
					clock.Set(at.Add(st.at))
					if err := w.inc(name, st.by); err != nil {
						t.Fatal(err)
					}
				}
				if got, want := quarters(t, s, name), map[int]int64{40: 9, 41: 3}; !sameQuarters(got, want) {
					t.Errorf("history of the day %v, want %v", got, want)
				}
				next, _ := history.QuarterOf(at.Add(14 * time.Hour))
				days, err := storage.HistoryOf(s).HistoryDays(ctx, name, "", next, next.AddDate(0, 0, 1))
				if err != nil || len(days) != 1 || days[0].Quarters[0] != 6 {
					t.Errorf("history of the next day %v, %v; want 6 in quarter 0", days, err)
				}
				prefix, err := storage.HistoryOf(s).HistoryDays(ctx, "", "turns/", next.AddDate(0, 0, -1), next.AddDate(0, 0, 1))
				if err != nil || len(prefix) != 2 {
					t.Fatalf("prefix history %v, %v; want two days", prefix, err)
				}
				if got := prefix[0].Quarters[40] + prefix[0].Quarters[41] + prefix[1].Quarters[0]; got < 18 {
					t.Errorf("prefix history holds %d of this counter's 18 at least", got)
				}
			})
		}
	})
}

// A refused step must be refused whatever the slot holds, and change
// neither the value nor the history, though the refusal moved the slot.
func TestABoundRefusesAStepOfAnotherQuarterAndChangesNothing(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, _ := open(dsn)
		clock := testenv.NewClock(at)
		s.Now = clock.Now
		ctx := context.Background()
		if _, _, err := s.Set(ctx, counters.SetRequest{Name: "stock", Value: 0, Min: counters.Bound{Value: int64p(0)}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Increment(ctx, "stock", 3); err != nil {
			t.Fatal(err)
		}
		clock.Set(at.Add(15 * time.Minute))
		for _, tc := range []struct {
			name string
			inc  func() error
		}{
			{"single", func() error { _, err := s.Increment(ctx, "stock", -4); return err }},
			{"many", func() error {
				_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "stock", By: -4}, {Name: "stock2", By: 1}})
				return err
			}},
		} {
			if err := tc.inc(); counters.ErrorCode(err) != counters.EOUTOFRANGE {
				t.Fatalf("%s: %v, want out_of_range", tc.name, err)
			}
			if c, err := s.Get(ctx, "stock"); err != nil || c.Value != 3 {
				t.Fatalf("%s: stock %+v, %v; want 3", tc.name, c, err)
			}
			if got, want := quarters(t, s, "stock"), map[int]int64{40: 3}; !sameQuarters(got, want) {
				t.Errorf("%s: history %v, want %v", tc.name, got, want)
			}
		}
	})
}

// While writers turn the quarter over and over, moving slots into
// counter_history, every read of the history sees each step exactly once:
// for a counter that only grows, never less than its value before the
// read, never more than its value after it; at the end, exactly its value.
func TestHistoryReadsNeitherMissNorRepeatAMovingSlot(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	day, _ := history.QuarterOf(at)
	clock := testenv.NewClock(day)
	s.Now = clock.Now
	ctx := context.Background()
	const name = "turning"
	var stop atomic.Bool
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for !stop.Load() {
				var err error
				if w%2 == 0 {
					_, err = s.Increment(ctx, name, 1)
				} else {
					_, err = s.IncrementMany(ctx, []counters.Increment{{Name: name, By: 1}, {Name: name + "/b", By: 1}})
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Go(func() {
		for q := range 90 {
			clock.Set(day.Add(time.Duration(q) * counters.HistoryGrain))
			time.Sleep(15 * time.Millisecond)
		}
		stop.Store(true)
	})
	value := func() int64 {
		c, err := s.Get(ctx, name)
		if err != nil {
			return 0
		}
		return c.Value
	}
	sum := func() int64 {
		days, err := storage.HistoryOf(s).HistoryDays(ctx, name, "", day, day.AddDate(0, 0, 1))
		if err != nil {
			if counters.ErrorCode(err) != counters.ENOTFOUND {
				t.Error(err)
			}
			return 0
		}
		var n int64
		for _, d := range days {
			for _, c := range d.Quarters {
				n += c
			}
		}
		return n
	}
	reads := 0
	for !stop.Load() {
		before := value()
		h := sum()
		after := value()
		if h < before || h > after {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("history read %d between values %d and %d", h, before, after)
		}
		reads++
	}
	wg.Wait()
	if h, v := sum(), value(); h != v {
		t.Fatalf("history %d, value %d", h, v)
	}
	t.Logf("%d reads, value %d", reads, value())
}
