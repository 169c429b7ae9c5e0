package batch

import (
	"math/rand/v2"
	"testing"
	"time"
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

// A trial's windows measure throughput under the limits, not the callers'
// pauses: a window that a pause of the load interrupts starts again after
// it, and the trial goes on as if the pause had not been.
func TestAPauseOfTheLoadIsNoWindow(t *testing.T) {
	l := newClimber(16)
	now := time.Unix(0, 0)
	l.ran(0, now)
	l.hold = 0
	// One window at the held limit starts a trial.
	batches := func(n int, d time.Duration) {
		for range n {
			now = now.Add(d)
			l.queued = true
			l.ran(32, now)
		}
	}
	batches(10, climbWindow/10)
	if l.window != 0 || l.limit != 2 {
		t.Fatalf("window %d at limit %d, want a trial's first window at 2", l.window, l.limit)
	}
	batches(l.skip, time.Millisecond)
	batches(5, climbWindow/10)
	// The load pauses for a second, then comes back.
	now = now.Add(time.Second)
	batches(11, climbWindow/10)
	if l.window != 1 {
		t.Fatalf("window %d of the trial after the pause, want 1: the paused window measured again", l.window)
	}
	if l.first < 2000 {
		t.Fatalf("the window's rate %.0f calls a second counts the pause, want that of its batches (3,200)", l.first)
	}
}

// Rounds that each take longer than a window (a slow database) are no
// pause: the batches end as often as they take, and the climber still
// measures them and climbs where more in flight pay.
func TestRoundsSlowerThanAWindowAreStillMeasured(t *testing.T) {
	l := newClimber(16)
	now := time.Unix(0, 0)
	const latency = 150 * time.Millisecond // a round's time at any limit
	for range 4000 {
		// limit rounds of 300 calls each end every latency/limit.
		now = now.Add(latency / time.Duration(l.limit))
		l.queued = true
		l.ran(300, now)
	}
	if l.held < 12 {
		t.Fatalf("held %d rounds where each more in flight answers as many calls more, want 12 or more", l.held)
	}
}
