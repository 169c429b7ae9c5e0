package coalesce_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersvc/countersvc/coalesce"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/internal/testenv"
)

// A round that runs after a period's end still counts each increment in
// the period in which it queued: here the increments queue on both sides of
// midnight in Berlin on the day the clocks go back, and run in one round
// of one counter, or one round of many.
func TestARoundAcrossMidnightCountsEachIncrementInItsOwnDay(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	midnight := time.Date(2025, 10, 26, 0, 0, 0, 0, berlin) // 22:00 UTC on the 25th
	tests := []struct {
		name   string
		before map[string]int64 // queued at 23:59:59
		after  map[string]int64 // queued at 00:00:01
	}{
		{"one counter", map[string]int64{"c": 3}, map[string]int64{"c": 2}},
		{"many counters", map[string]int64{"c": 3, "e": 1}, map[string]int64{"c": 2, "d": 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := mustStore(t)
			clock := testenv.NewClock(midnight.Add(-time.Second))
			store.Now = clock.Now
			gated := newGated(store)
			co := coalesce.New(gated, coalesce.Options{Now: clock.Now})
			svc := counters.NewService(counters.BackendOf(co))
			ctx := context.Background()

			done := make(chan error, 100)
			go func() { _, err := svc.Increment(ctx, "blocker", 1); done <- err }()
			<-gated.entered // in flight: what follows queues
			queue := func(steps map[string]int64) int {
				n := 0
				for name, k := range steps {
					for range k {
						n++
						go func() { _, err := svc.Increment(ctx, name, 1); done <- err }()
					}
				}
				return n
			}
			waitPending := func(n int) {
				for deadline := time.Now().Add(30 * time.Second); coalesce.Pending(co) < n; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatalf("%d increments queued, want %d", coalesce.Pending(co), n)
					}
				}
			}
			n := queue(tc.before)
			waitPending(n)
			clock.Set(midnight.Add(time.Second))
			n += queue(tc.after)
			waitPending(n)
			close(gated.gate)
			for range n + 1 {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}

			hs := history.NewService(store, clock.Now)
			for _, name := range []string{"c", "d", "e"} {
				q, err := hs.Parse(history.Request{Name: name, Zone: "Europe/Berlin", From: "2025-10-25", To: "2025-10-27"})
				if err != nil {
					t.Fatal(err)
				}
				s, err := hs.Series(ctx, q)
				if counters.ErrorCode(err) == counters.ENOTFOUND && tc.before[name]+tc.after[name] == 0 {
					continue
				}
				if err != nil {
					t.Fatal(err)
				}
				if got, want := [2]int64{s.Points[0].Count, s.Points[1].Count}, [2]int64{tc.before[name], tc.after[name]}; got != want {
					t.Errorf("%s: days 25th and 26th counted %v, want %v", name, got, want)
				}
			}
		})
	}
}
