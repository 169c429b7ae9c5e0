package batch

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// The climber, fed the throughput of a simulated server at each limit,
// settles at (or next to) the limit where that server is fastest, and
// spends few windows away from it: whether the best is one batch at a
// time (the database shares the service's cores), many (a database with
// cores of its own), or the ceiling.
func TestTheClimberSettlesWhereThroughputPeaks(t *testing.T) {
	tests := []struct {
		name string
		max  int
		rate func(limit int) float64 // calls a second
		best int
	}{
		{"fewer batches are faster (a small shared box)", 16, func(l int) float64 { return 20000 / (1 + 0.1*float64(l-1)) }, 1},
		{"the server peaks at eight batches", 32, func(l int) float64 { return 100000 - 1500*math.Pow(float64(l-8), 2) }, 8},
		{"more is always faster, up to the ceiling", 12, func(l int) float64 { return 10000 * float64(l) }, 12},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := newClimber(tc.max)
			now := time.Unix(0, 0)
			away := 0
			const windows = 2000
			for w := range windows {
				if w >= windows/2 && abs(l.limit-tc.best) > 1 {
					away++
				}
				// One window: its calls answered in a few batches, the
				// limit holding some back.
				for range 4 {
					now = now.Add(climbWindow / 4)
					l.queued = true
					l.ran(int(tc.rate(l.limit)*(climbWindow/4).Seconds()), now)
				}
			}
			if got := l.limit; abs(got-tc.best) > 1 {
				t.Fatalf("settled at %d batches, want %d (±1)", got, tc.best)
			}
			if away > windows/20 {
				t.Fatalf("%d of the last %d windows ran more than one step from the best limit", away, windows/2)
			}
		})
	}
}

// When callers are fewer than the limit allows, throughput says nothing of
// the limit: it stays where it is.
func TestTheClimberKeepsItsLimitWhileCallersSetThePace(t *testing.T) {
	l := newClimber(16)
	l.limit = 5
	now := time.Unix(0, 0)
	for w := range 500 {
		now = now.Add(climbWindow)
		l.ran(1000+w%7*100, now) // never held back
	}
	if l.limit != 5 {
		t.Fatalf("limit %d, want 5", l.limit)
	}
}

func abs(n int) int { return max(n, -n) }

// A server that is as fast at every limit, measured with a few percent of
// noise in each window, keeps the climber low: each batch more in flight
// costs fixed work that noise alone must not buy.
func TestTheClimberStaysLowWhereNoiseIsAllThatDiffers(t *testing.T) {
	l := newClimber(16)
	now := time.Unix(0, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	high := 0
	const windows = 4000
	for range windows {
		now = now.Add(climbWindow)
		l.queued = true
		l.ran(int(2000*(1+0.06*(rng.Float64()-0.5))), now) // ±3%
		if l.limit > 2 {
			high++
		}
	}
	if high > windows/20 {
		t.Fatalf("%d of %d windows ran more than two batches at once on a flat hill (limit now %d)", high, windows, l.limit)
	}
}

// A probe up that wins one window and not the next goes back: one lucky
// window does not buy a batch more in flight.
func TestTheClimberKeepsAStepUpOnlyWhenItWinsTwoWindowsRunning(t *testing.T) {
	for _, tc := range []struct {
		name   string
		second float64 // calls a second in the probe's second window
		want   int
	}{
		{"the second window loses", 10000, 1},
		{"both windows win", 11000, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newClimber(16)
			now := time.Unix(0, 0)
			l.ran(0, now) // the first window starts
			window := func(rate float64) {
				now = now.Add(climbWindow)
				l.queued = true
				l.ran(int(rate*climbWindow.Seconds()), now)
			}
			for i := 0; !l.probing; i++ {
				if i > 100 {
					t.Fatal("the climber never probed")
				}
				window(10000)
			}
			window(10000) // the settling window after the move
			window(11000) // wins by 10%
			window(tc.second)
			if l.probing || l.limit != tc.want {
				t.Fatalf("limit %d (probing %v), want %d settled", l.limit, l.probing, tc.want)
			}
		})
	}
}
