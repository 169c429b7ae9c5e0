package cache

import (
	"slices"
	"sync"
	"time"

	"github.com/countersvc/countersvc/hits"
)

// arrivals are the page hits whose limits' answer is on its way back from
// Redis, and which the limits' sender will hand on to their increments'
// queue (hits.Chain) as it reads that answer: the coalescer, told of them
// (hits.Awaiter), may hold its next round on their counter until they are
// queued, so that they join it rather than wait out a whole round more.
//
// Under the bench's page hits at 64 connections a hot page's rounds run
// one after another, and its rate is the hits a round carries over the
// round's time; a round takes the hits that reached the coalescer while
// the one before ran, and a limits pipeline whose answer comes just after
// that leaves its hits (about a dozen) for the round after.
type arrivals struct {
	mu      sync.Mutex
	flights []*flight
	// took is how long a flight has taken lately (a moving average of an
	// eighth of each new one), for when those in flight are due.
	took time.Duration
}

// flight is one limits pipeline in Redis with the hits it may start.
type flight struct {
	names []string // the counter of each of its hits' increments
	left  time.Time
	done  chan struct{}
}

var _ hits.Arrivals = (*arrivals)(nil)

// depart records the pipeline of reqs, when any of them may start an
// increment, until land.
func (a *arrivals) depart(reqs []*queued) *flight {
	var f *flight
	for _, q := range reqs {
		if q.chain == nil {
			continue
		}
		if f == nil {
			f = &flight{names: make([]string, 0, len(reqs)), left: time.Now(), done: make(chan struct{})}
		}
		f.names = append(f.names, q.chain.Name)
	}
	if f != nil {
		a.mu.Lock()
		a.flights = append(a.flights, f)
		a.mu.Unlock()
	}
	return f
}

// land ends f (nil: nothing departed), once its hits have been answered or
// handed on.
func (a *arrivals) land(f *flight) {
	if f == nil {
		return
	}
	took := time.Since(f.left)
	a.mu.Lock()
	if i := slices.Index(a.flights, f); i >= 0 {
		a.flights = slices.Delete(a.flights, i, i+1)
	}
	a.took += (took - a.took) / 8
	a.mu.Unlock()
	close(f.done)
}

// Arriving implements hits.Arrivals: the first pipeline in flight with
// hits on name, how many, and when it is due by the flights before it.
func (a *arrivals) Arriving(name string) (<-chan struct{}, int, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, f := range a.flights {
		n := 0
		for _, m := range f.names {
			if m == name {
				n++
			}
		}
		if n > 0 {
			return f.done, n, max(a.took-time.Since(f.left), 0)
		}
	}
	return nil, 0, 0
}
