package batch

import (
	"math/rand/v2"
	"testing"
)

// Where no neighbour pays (the database shares the service's two cores),
// every trial is lost, and each window it spends at the neighbour costs
// smaller rounds: more statements and commits for the same calls. Those
// windows stay a small share of all, also in a fresh instance's first
// seconds, where a benchmark's short runs spend their whole life: after
// the first trial, at most one window in climbCost runs away from the
// held limit, and the trials themselves grow rarer while they keep losing.
func TestTrialsThatKeepLosingCostAFewWindowsInAHundred(t *testing.T) {
	for _, noise := range []float64{0.06, 0.3, 0.6} {
		for seed := range uint64(5) {
			l := newClimber(16)
			rng := rand.New(rand.NewPCG(seed, 7))
			const windows = 3000
			away, trials, inTrial := 0, 0, false
			var starts []int
			simulate(l, windows, func(limit, _ int) float64 {
				return 4000 / (1 + 0.05*float64(limit-1)) // one more round costs 5%
			}, func() float64 { return 1 + noise*(rng.Float64()-0.5) }, func(step int, l *climber) {
				if l.window >= 0 && !inTrial {
					trials++
					starts = append(starts, step)
				}
				inTrial = l.window >= 0
				if l.held != 1 || l.limit == 1 {
					// Trials from a limit that noise won are the other
					// tests' business: this one counts the cost of
					// trialling from where the limit belongs.
					return
				}
				away++
				// The first trial may come in the first windows, and its
				// climbPairs windows at the neighbour count each up to
				// twice here: the climber's windows, which start after
				// the batches of the limit before, lag these.
				if allowed := 2*climbPairs + step/climbCost; away > allowed {
					t.Fatalf("noise ±%.0f%%, seed %d: %d of the first %d windows away from the held limit, want at most %d (trials began at %v)", noise*50, seed, away, step+1, allowed, starts)
				}
			})
			if l.held != 1 {
				t.Fatalf("noise ±%.0f%%, seed %d: settled at %d rounds, want 1", noise*50, seed, l.held)
			}
			// Holds that double, up to climbHoldMax, leave a trial in
			// climbHoldMax windows, and a few more where noise won a
			// move that the next trials took back.
			if want := windows/climbHoldMax + 12; trials > want {
				t.Fatalf("noise ±%.0f%%, seed %d: %d trials in %d windows (at %v), want at most %d", noise*50, seed, trials, windows, starts, want)
			}
		}
	}
}
