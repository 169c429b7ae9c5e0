package batch

import (
	"math"
	"time"
)

// climber sizes how many batches a queue runs at once (Options.Adaptive)
// by climbing the hill of throughput: it tries a limit one step from the
// one it holds, and moves there only when the higher of the two answers
// clearly more calls a second. That is the .NET thread pool's method
// (Fuentes and Vanderwiel's hill climbing), and it fits batches better
// than a latency rule such as TCP Vegas or Netflix's Gradient: a batch's
// time depends on its size as much as on queueing, and fewer, larger
// batches are often faster in all even though each takes longer. With
// callers waiting on the batches, more calls a second is the same as
// less time each waits. So the limit follows what the server behind the
// queue can take: on a small box where the database competes with the
// service for the same cores, one large batch wins; with a database of
// many cores across a network, many smaller ones in flight do. There is
// nothing to tune.
//
// The hill is not flat in cost: each batch more in flight makes batches
// smaller, and every batch costs the service and the database the same
// fixed work (a statement, a commit, a wake-up) whatever it carries. On a
// small box shared with other work a window's rate moves by tens of
// percent with that work alone, and a climber that compares one window
// with the next, or with a threshold fixed in percent, walks up on noise
// and pays for it in every later window. So each trial is a paired
// experiment that measures its own noise:
//
//   - it runs climbPairs pairs of windows, one at the held limit and one at
//     its neighbour, in the order ABBA ABBA, so that a load that rises or
//     falls steadily favours neither;
//   - the higher limit wins only when the mean of its pairs' log-ratios
//     beats the lower by climbGain and by Student's t at 99% over the
//     pairs' own spread, else the lower wins: up and down alike, so that
//     between limits that measure alike the climber comes down to the
//     cheaper one, and noise, however loud, rarely walks it up (a trial
//     up wins by chance about one time in a hundred, and the next trial
//     down takes it back with the same odds reversed);
//   - a trial that two pairs already decide ends there: for the higher
//     limit by the same test, so that a climb that pays (a database with
//     cores of its own) takes four windows a step, and for the lower when
//     the higher gained nothing at all.
//
// Only windows in which the limit held some call back count: when callers
// are fewer than the limit allows, throughput says nothing about the limit,
// which then stays as it is, and a trial whose window was not held back
// ends as a lost one. After a trial that moved the limit the next goes on
// the same way at once; after one that kept it, the next goes the other
// way after a hold that grows while trials keep the limit, and that keeps
// the windows spent at a neighbour that lost to one in climbCost, so that
// a settled queue spends few windows away from it, from its first seconds.
type climber struct {
	max   int // the ceiling: Options.MaxInFlight
	limit int // the batches that may run at once now
	held  int // the limit the climber holds; limit differs from it in a trial's windows at the neighbour
	dir   int // where the next trial goes: +1 or -1

	start  time.Time     // of the window
	last   time.Time     // when the last batch ended
	gap    time.Duration // between batches' ends, a moving average
	calls  int           // answered in the window
	queued bool          // the limit held a call back in the window
	skip   int           // batches still to leave out after a move: taken under the limit before

	window  int                 // windows of the running trial measured; -1: no trial
	first   float64             // the rate of the pair's first window
	diffs   [climbPairs]float64 // per pair: log(rate at the higher limit / rate at the lower)
	away    int                 // windows of the running trial measured at the neighbour
	kept    int                 // trials that kept the limit since it last moved
	hold    int                 // held-back windows to stay before the next trial
	backoff int                 // hold after the next trial that keeps the limit
}

// Windows last climbWindow, and longer until climbCalls calls have been
// answered in them, so that a window's rate is not a handful of calls. A
// trial is climbPairs pairs of windows; the higher limit must win by
// climbGain (in log, about 4%) and by climbT[pairs] standard errors. A
// trial that keeps the limit is followed by a hold of climbHoldMin
// windows, doubling up to climbHoldMax while trials keep it, and of at
// least climbCost-1 for each window it spent at the neighbour.
const (
	climbWindow  = 100 * time.Millisecond
	climbCalls   = 256
	climbPairs   = 4
	climbGain    = 0.04
	climbHoldMin = 4
	climbHoldMax = 128
	climbCost    = 32
	climbPause   = 8
)

// climbT is Student's t at 99%, one-sided, for the mean of n pairs (n-1
// degrees of freedom).
var climbT = [climbPairs + 1]float64{2: 31.82, 3: 6.965, 4: 4.541}

func newClimber(max int) *climber {
	return &climber{max: max, limit: 1, held: 1, dir: 1, window: -1, backoff: climbHoldMin}
}

// ran is told of each batch that has run, with the time. Caller holds the
// queue's lock.
func (l *climber) ran(calls int, now time.Time) {
	paused := false
	if !l.last.IsZero() {
		gap := now.Sub(l.last)
		paused = gap > climbWindow && gap > climbPause*l.gap
		l.gap += (gap - l.gap) / 8
	}
	l.last = now
	switch {
	case l.skip > 0:
		// A batch taken before the move: the window starts after it.
		l.skip--
		l.start, l.calls, l.queued = now, 0, false
		return
	case paused:
		// No batch ended for a window's time and climbPause times as
		// long as batches take to end one after another: the callers
		// paused (a lull, a benchmark between its runs), and the window
		// would measure the pause. It starts again after it; a trial
		// goes on as if there had been none.
		l.start, l.calls, l.queued = now, 0, false
		return
	}
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
	if l.limit != l.held {
		l.away++
	}
	switch {
	case l.window >= 0 && !queued:
		// The callers, not the limit, set the pace: the trial learnt
		// nothing, and the neighbour was not wanted.
		l.settle(l.held)
	case l.window >= 0:
		l.measured(rate)
	case !queued:
	case l.hold > 0:
		l.hold--
	default:
		l.try()
	}
}

// try starts a trial of the neighbour in dir, or in the other direction
// when dir leads out of [1, max].
func (l *climber) try() {
	if next := l.held + l.dir; next < 1 || next > l.max {
		l.dir = -l.dir
	}
	if next := l.held + l.dir; next >= 1 && next <= l.max {
		l.window, l.away = 0, 0
		l.move(next)
	}
}

// trialAt says whether window w of a trial runs at the neighbour: ABBA
// ABBA, so that a steady drift cancels over two pairs.
func trialAt(w int) bool { return w%4 == 0 || w%4 == 3 }

// measured takes the rate of a trial's window, decides the trial when its
// pairs do, and otherwise sets the limit for the next window.
func (l *climber) measured(rate float64) {
	w := l.window
	l.window++
	if w%2 == 0 {
		l.first = rate
	} else {
		at, other := rate, l.first // rate at the neighbour, at held
		if trialAt(w - 1) {
			at, other = other, at
		}
		d := math.Log(at / other)
		if l.dir < 0 {
			d = -d // the neighbour is the lower limit
		}
		l.diffs[w/2] = d
		if pairs := w/2 + 1; pairs == climbPairs || pairs == 2 {
			switch higher, gain := higherWins(l.diffs[:pairs]); {
			case higher:
				l.settle(max(l.held, l.held+l.dir))
				return
			case pairs == climbPairs || gain <= 0:
				// Two pairs in which the higher limit gained nothing
				// at all end the trial as four would.
				l.settle(min(l.held, l.held+l.dir))
				return
			}
		}
	}
	if trialAt(l.window) {
		l.move(l.held + l.dir)
	} else {
		l.move(l.held)
	}
}

// higherWins says whether the log-ratios diffs show the higher limit
// faster: by climbGain, and by Student's t over their spread; gain is
// their mean.
func higherWins(diffs []float64) (higher bool, gain float64) {
	n := float64(len(diffs))
	mean := 0.0
	for _, d := range diffs {
		mean += d
	}
	mean /= n
	ss := 0.0
	for _, d := range diffs {
		ss += (d - mean) * (d - mean)
	}
	se := math.Sqrt(ss / (n - 1) / n)
	return mean > climbGain && mean > climbT[len(diffs)]*se, mean
}

// settle ends a trial at limit to: on the same way at once if it moved,
// else the other way after a hold that grows while trials keep the limit.
// A trial that keeps the limit has cost its windows at the neighbour
// (where two cores are best spent on one round, two rounds in flight each
// carry fewer calls for the same statement and commit). Once the limit
// has been kept against every neighbour it has (the other side too, after
// a move, so that a move that noise won is soon taken back), the hold
// keeps those windows to one in climbCost, also in a fresh instance's
// first seconds.
func (l *climber) settle(to int) {
	l.window = -1
	if to != l.held {
		l.dir = to - l.held
		l.held, l.hold, l.backoff, l.kept = to, 0, climbHoldMin, 0
	} else {
		l.dir = -l.dir
		l.kept++
		l.hold, l.backoff = l.backoff, min(2*l.backoff, climbHoldMax)
		if l.kept >= 2 || l.held == 1 || l.held == l.max {
			l.hold = max(l.hold, (climbCost-1)*l.away)
		}
	}
	l.move(to)
}

// move sets the limit for the next window; the batches in flight under
// the one before, at most that many, are left out of it.
func (l *climber) move(to int) {
	if to != l.limit {
		l.skip = l.limit
		l.limit = to
	}
}
