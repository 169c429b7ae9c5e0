// Package deadline gives work done on behalf of many callers (a coalesced
// round of increments, a group commit of tickets) the deadline it may run
// to, and runs a process's periodic work, each run within its interval.
package deadline

import (
	"context"
	"time"
)

// Default bounds shared work when none of its callers gave a deadline: a
// caller without one still gets an answer, and a hung server cannot hold
// the work forever. HTTP requests always carry their own (COUNTERS_MYSQL_TIMEOUT).
const Default = 5 * time.Second

// Latest returns a context, detached from the callers' cancellation, that
// ends at the latest of their deadlines: every caller waits for the shared
// work, so a caller that gives up early must not cut it short for the
// others, and none may be cut off before its own time. A caller without a
// deadline counts as Default from now.
func Latest[T any](callers []T, ctx func(T) context.Context) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, c := range callers {
		d, ok := ctx(c).Deadline()
		if !ok {
			d = time.Now().Add(Default)
		}
		if d.After(latest) {
			latest = d
		}
	}
	if latest.IsZero() {
		latest = time.Now().Add(Default)
	}
	return context.WithDeadline(context.Background(), latest)
}

// Every runs fn every interval until ctx ends, each run with a deadline of
// one interval, so that a run never overlaps the next: the periodic work of
// a process (purges, lease renewals, usage writes).
func Every(ctx context.Context, every time.Duration, fn func(ctx context.Context)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		fn(rctx)
		cancel()
	}
}

// EveryOrLess is Every for work that is often idle: fn says whether its run
// found work (or failed), and while runs find none the pause between them
// doubles, up to most; the first run that finds work brings it back to
// every. Each run still has a deadline of one interval.
func EveryOrLess(ctx context.Context, every, most time.Duration, fn func(ctx context.Context) (worked bool)) {
	pause := every
	t := time.NewTimer(pause)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, every)
		worked := fn(rctx)
		cancel()
		pause = nextPause(pause, every, most, worked)
		t.Reset(pause)
	}
}

// nextPause is the pause after a run that followed one of pause: one
// interval after a run that found work, else twice the last, at most most.
func nextPause(pause, every, most time.Duration, worked bool) time.Duration {
	if worked {
		return every
	}
	return min(2*pause, most)
}
