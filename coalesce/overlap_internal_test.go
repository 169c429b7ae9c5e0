package coalesce

import (
	"testing"

	"github.com/countersvc/countersvc/internal/foundation/batch"
)

// Statements of one hot counter overlap up to the queue's limit, whatever
// it is: a fixed cap would hold a hot counter below what the queue found
// the database rewards, and hold its increments back where the queue's
// climber cannot see it. MaxPerCounter, when set, still bounds them.
func TestAHotCounterOverlapsUpToTheQueuesLimit(t *testing.T) {
	for _, tc := range []struct {
		name              string
		limit, perCounter int
		fixed             bool // the limit is MaxInFlight, not what the climber found
		busy              int  // statements of the counter in flight
		want              batch.Verdict
	}{
		{"fixed limit 6, 2 in flight", 6, 0, true, 2, batch.Take},
		{"fixed limit 6, 5 in flight", 6, 0, true, 5, batch.Take},
		{"fixed limit 6, 6 in flight", 6, 0, true, 6, batch.Later},
		{"fixed limit 6, at most 2 a counter, 2 in flight", 6, 2, true, 2, batch.Later},
		{"fixed limit 6, at most 2 a counter, 1 in flight", 6, 2, true, 1, batch.Take},
		{"adaptive, starting at 1, 1 in flight", 16, 0, false, 1, batch.Later},
		{"adaptive, starting at 1, none in flight", 16, 0, false, 0, batch.Take},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCoalescer(nil, Options{MaxInFlight: tc.limit, MaxPerCounter: tc.perCounter})
			if tc.fixed {
				c.q = c.queue(false)
			}
			if tc.busy > 0 {
				c.busy["hot"] = tc.busy
			}
			if got := c.chooser()(step{name: "hot", by: 1}); got != tc.want {
				t.Errorf("with %d statements of the counter in flight and a limit of %d, the chooser says %v, want %v", tc.busy, c.q.Limit(), got, tc.want)
			}
			if got := c.chooser()(step{name: "other", by: 1}); got != batch.Take {
				t.Errorf("an idle counter beside it: %v, want Take", got)
			}
		})
	}
}
