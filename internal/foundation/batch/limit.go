package batch

import "time"

// climber sizes how many batches a queue runs at once (Options.Adaptive)
// by climbing the hill of throughput: it moves the limit one step, keeps
// the step when more calls a second are answered, and goes back when fewer
// are. That is how the .NET thread pool sizes itself (Fuentes and
// Vanderwiel's hill climbing), and it fits batches better than a latency
// rule such as TCP Vegas or Netflix's Gradient: a batch's time depends on
// its size as much as on queueing, and fewer, larger batches are often
// faster in all even though each takes longer. So the limit follows what
// the server behind the queue can take: on a small box where the database
// competes with the service for the same cores, one or two large batches
// win; with a database of many cores across a network, many smaller ones
// in flight do. There is nothing to tune.
//
// The hill is not flat in cost: each batch more in flight makes batches
// smaller, and every batch costs the service and the database the same
// fixed work (a statement, a commit, a wake-up) whatever it carries. On a
// small box that work comes out of the same cores the load needs, and a
// window's rate is noisy enough that an unbiased climber walks up the
// limits by chance and pays for it in every later window. So a step up is
// kept only when it clearly pays (climbUpGain) in two windows running,
// and a step down is kept unless it clearly costs (climbDownLoss): between
// two limits that measure alike, the climber settles on the lower, cheaper
// one.
//
// Only windows in which the limit held some call back count: when callers
// are fewer than the limit allows, throughput says nothing about the limit,
// which then stays as it is. Once a step back has confirmed the best limit,
// the climber holds it for a while before it probes again, longer each
// time the probes fail, so that a settled queue spends few windows on
// worse limits.
type climber struct {
	max   int // the ceiling: Options.MaxInFlight
	limit int // the batches that may run at once now
	dir   int // where the next probe goes: +1 or -1

	start  time.Time // of the window
	calls  int       // answered in the window
	queued bool      // the limit held a call back in the window

	probing bool    // the window measures limit, moved from the settled one
	won     bool    // a probe up has beaten base in one window: one more to go
	settle  bool    // the window after a move: batches of the old limit are still in it
	base    float64 // calls a second at the settled limit
	hold    int     // windows to stay before the next probe
	backoff int     // hold after the next failed probe
}

// Windows last climbWindow, and longer until climbCalls calls have been
// answered in them, so that a window's rate is not a handful of calls. A
// probe up is kept when it beats the settled rate by climbUpGain, a probe
// down when it keeps at least climbDownLoss of it: noise alone should
// rarely move the limit up, and a probe up must win two windows running,
// which noise alone does about as often as the square of one.
const (
	climbWindow   = 100 * time.Millisecond
	climbCalls    = 256
	climbUpGain   = 1.04
	climbDownLoss = 0.98
	climbHoldMin  = 4
	climbHoldMax  = 32
)

// kept says whether a probe that measured rate beats the settled base:
// by climbUpGain going up, within climbDownLoss going down.
func (l *climber) kept(rate float64) bool {
	if l.dir > 0 {
		return rate > l.base*climbUpGain
	}
	return rate >= l.base*climbDownLoss
}

func newClimber(max int) *climber {
	return &climber{max: max, limit: 1, dir: 1, backoff: climbHoldMin}
}

// ran is told of each batch that has run, with the time. Caller holds the
// queue's lock.
func (l *climber) ran(calls int, now time.Time) {
	if l.start.IsZero() {
		l.start = now
	}
	l.calls += calls
	d := now.Sub(l.start)
	if d < climbWindow || l.calls < climbCalls {
		return
	}
	rate := float64(l.calls) / d.Seconds()
	queued := l.queued
	l.start, l.calls, l.queued = now, 0, false
	if !queued {
		// The callers, not the limit, set the pace: a probe in flight
		// learnt nothing; measure again from where it settled.
		if l.probing {
			l.limit -= l.dir
			l.probing, l.settle, l.won = false, false, false
		}
		l.base = 0
		return
	}
	switch {
	case l.settle:
		l.settle = false
	case l.probing && l.kept(rate) && l.dir > 0 && !l.won:
		// Better by chance, as often as not: it must win a second window.
		l.won = true
	case l.probing && l.kept(rate):
		// Better: settle here and go on the same way at once.
		l.probing, l.won, l.base, l.backoff = false, false, max(rate, l.base), climbHoldMin
	case l.probing:
		// Worse: back to where it was, and the next probe the other way,
		// after a hold that grows while probes keep failing.
		l.won = false
		l.limit -= l.dir
		l.dir = -l.dir
		l.probing, l.base = false, 0
		l.hold, l.backoff = l.backoff, min(2*l.backoff, climbHoldMax)
	case l.base == 0:
		l.base = rate // a settled window to compare the next probe with
	case l.hold > 0:
		l.hold--
		l.base = (l.base + rate) / 2
	default:
		l.base = (l.base + rate) / 2
		if next := l.limit + l.dir; next >= 1 && next <= l.max {
			l.limit, l.probing, l.settle = next, true, true
		} else {
			l.dir = -l.dir
		}
	}
}
