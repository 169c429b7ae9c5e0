package batch

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// simulate feeds the climber windows of a server whose throughput at each
// limit is rate (calls a second; step counts windows of climbWindow, for a
// load that changes over time) times noise (drawn once a window), every
// call held back by the limit, and shows the climber to seen at the start
// of each window. A
// window's calls come in 20 batches per batch in flight, as a server's
// rounds would, each at the rate of the limit it ran under.
func simulate(l *climber, windows int, rate func(limit, step int) float64, noise func() float64, seen func(step int, l *climber)) {
	now := time.Unix(0, 0)
	l.ran(0, now) // the first window starts
	owed := 0.0   // calls answered in part
	for step := range windows {
		seen(step, l)
		n := noise()
		for end := now.Add(climbWindow); now.Before(end); {
			dt := climbWindow / time.Duration(20*l.limit)
			now = now.Add(dt)
			owed += rate(l.limit, step) * n * dt.Seconds()
			calls := int(owed)
			owed -= float64(calls)
			l.queued = true
			l.ran(calls, now)
		}
	}
}

func quiet() float64 { return 1 }

// server is a latency model of the database behind the coalescer: callers
// wait on rounds, each round's calls split evenly over the rounds in
// flight; a round costs the server round of work plus row a call on cores
// cores (rounds beyond cores share them) and a wait that takes no core (a
// commit's log flush, a network hop); where the service shares those
// cores, each call also costs it call, and the cores' time bounds the rate.
type server struct {
	callers          float64
	round, row, call time.Duration
	wait             time.Duration
	cores            float64
	noise, drift     float64 // a window's rate varies by ±noise/2, and with the other load by ±drift over 30 s
}

func (s server) rate(limit int) float64 {
	l := float64(limit)
	perRound := s.callers / l
	work := (s.round + time.Duration(perRound)*s.row).Seconds()
	latency := s.wait.Seconds() + work*max(1, l/s.cores)
	rate := s.callers / latency
	if s.call > 0 {
		// Service and server on the same cores: what a call costs both.
		rate = min(rate, s.cores/(s.call.Seconds()+s.round.Seconds()/perRound+s.row.Seconds()))
	}
	return rate
}

// The limit settles where more batches in flight pay by a clear margin,
// and at one where they do not, however loud the noise: a database with
// cores of its own across a network is faster with many rounds in flight;
// one that shares the service's two cores (and those with other work) is
// not, since each round costs its fixed work out of the same cores.
func TestTheClimberSettlesWhereMoreBatchesPay(t *testing.T) {
	ownCores := server{callers: 256, round: 100 * time.Microsecond, row: 20 * time.Microsecond, wait: 500 * time.Microsecond, cores: 16, noise: 0.06}
	shared := server{callers: 64, round: 100 * time.Microsecond, row: 8 * time.Microsecond, call: 50 * time.Microsecond, wait: 100 * time.Microsecond, cores: 2, noise: 0.06}
	noisy := shared
	noisy.noise, noisy.drift = 0.4, 0.3
	tests := []struct {
		name   string
		s      server
		lo, hi int // where the limit must settle
	}{
		{"a database of 16 cores a network hop away", ownCores, 9, 16},
		{"a database on the service's two cores", shared, 1, 1},
		{"a database on the service's two cores, shared with other work", noisy, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(5) {
				l := newClimber(16)
				rng := rand.New(rand.NewPCG(seed, 40))
				const windows = 3000
				away, trial := 0, 0
				simulate(l, windows, func(limit, step int) float64 {
					return tc.s.rate(limit) * (1 + tc.s.drift/2*math.Sin(2*math.Pi*float64(step)/300))
				}, func() float64 { return 1 + tc.s.noise*(rng.Float64()-0.5) }, func(step int, l *climber) {
					if step < windows/2 {
						return
					}
					if l.held < tc.lo || l.held > tc.hi {
						away++
					}
					if l.limit < tc.lo || l.limit > tc.hi {
						trial++
					}
				})
				if l.held < tc.lo || l.held > tc.hi {
					t.Fatalf("seed %d: settled at %d batches, want %d to %d", seed, l.held, tc.lo, tc.hi)
				}
				if away > windows/2/50 || trial > windows/2/10 {
					t.Fatalf("seed %d: of the last %d windows, %d held a limit outside %d to %d batches and %d tried one", seed, windows/2, away, tc.lo, tc.hi, trial)
				}
			}
		})
	}
}

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
			const windows = 2000
			away := 0
			simulate(l, windows, func(limit, _ int) float64 { return tc.rate(limit) }, quiet, func(step int, l *climber) {
				if step >= windows/2 && abs(l.limit-tc.best) > 1 {
					away++
				}
			})
			if got := l.held; abs(got-tc.best) > 1 {
				t.Fatalf("settled at %d batches, want %d (±1)", got, tc.best)
			}
			if away > windows/20 {
				t.Fatalf("%d of the last %d windows ran more than one step from the best limit", away, windows/2)
			}
		})
	}
}

// Where more batches paid and then stop paying (the database's machine
// took on other work), the climber comes back down to one.
func TestTheClimberComesDownWhenMoreBatchesStopPaying(t *testing.T) {
	paying := func(l int) float64 { return 10000 * float64(l) }
	flat := func(int) float64 { return 20000 }
	l := newClimber(16)
	const windows = 1000
	cameDown := -1
	simulate(l, 2*windows, func(limit, step int) float64 {
		if step < windows {
			return paying(limit)
		}
		return flat(limit)
	}, quiet, func(step int, l *climber) {
		if step == windows && l.held < 12 {
			t.Fatalf("climbed to %d batches where more always paid, want 12 or more", l.held)
		}
		if step > windows && l.held == 1 && cameDown < 0 {
			cameDown = step - windows
		}
	})
	if cameDown < 0 || cameDown > windows/2 || l.held != 1 {
		t.Fatalf("came down to one batch after %d windows (-1: never; now %d), want within %d", cameDown, l.held, windows/2)
	}
}

// A trial decides for the higher limit only when it wins by climbGain
// and beyond the spread of its own pairs: a gain that one pair shows and
// the next takes back is noise.
func TestTheHigherLimitWinsOnlyBeyondItsOwnNoise(t *testing.T) {
	tests := []struct {
		name  string
		diffs []float64 // log-ratios of the higher limit's rate to the lower's
		want  bool
	}{
		{"a steady gain of 10%", []float64{0.10, 0.09, 0.11, 0.10}, true},
		{"two pairs gaining 50% alike", []float64{0.5, 0.49}, true},
		{"two pairs gaining 50% and 40%: two more to decide", []float64{0.5, 0.4}, false},
		{"a gain of 2%, however steady", []float64{0.02, 0.02, 0.02, 0.02}, false},
		{"a gain of 10% on average that one pair makes", []float64{0.4, 0, 0, 0}, false},
		{"alternately ahead and behind", []float64{0.15, -0.05, 0.15, -0.05}, false},
		{"two pairs of a gain the third spread could hide", []float64{0.2, 0.05}, false},
		{"the lower faster", []float64{-0.1, -0.1, -0.1, -0.1}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := higherWins(tc.diffs); got != tc.want {
				t.Fatalf("higherWins(%v) = %v, want %v", tc.diffs, got, tc.want)
			}
		})
	}
}

// When callers are fewer than the limit allows, throughput says nothing of
// the limit: it stays where it is.
func TestTheClimberKeepsItsLimitWhileCallersSetThePace(t *testing.T) {
	l := newClimber(16)
	l.limit, l.held = 5, 5
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

// A server that is as fast at every limit, measured with noise in each
// window and a load that rises and falls, keeps the climber at one: each
// batch more in flight costs fixed work that noise alone must not buy.
// Its trials of two batches take few windows.
func TestTheClimberStaysLowWhereNoiseIsAllThatDiffers(t *testing.T) {
	for _, noise := range []float64{0.06, 0.3, 0.6} {
		l := newClimber(16)
		rng := rand.New(rand.NewPCG(1, 2))
		high, trial := 0, 0
		const windows = 4000
		simulate(l, windows, func(_, step int) float64 {
			return 2000 * (1 + 0.3*math.Sin(float64(step)/50))
		}, func() float64 { return 1 + noise*(rng.Float64()-0.5) }, func(_ int, l *climber) {
			if l.held > 1 {
				high++
			}
			if l.limit != l.held {
				trial++
			}
		})
		if high > windows/50 || trial > windows/20 || l.held != 1 {
			t.Fatalf("noise ±%.0f%%: of %d windows on a flat hill, %d held more than one batch at once and %d tried a neighbour (limit now %d)", noise*50, windows, high, trial, l.held)
		}
	}
}
