package coalesce

import (
	"time"

	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/internal/foundation/batch"
)

// Start implements hits.Starter: it queues an increment of each c.Name
// by 1, with c.Extra, all in one go and without waiting; each answer
// closes its c.Done. c.Call keeps the queued call for Result.
func (s *Store) Start(cs []*hits.Chain) {
	calls := make([]*batch.Call[step, int64], len(cs))
	at := s.c.opts.Now()
	for i, c := range cs {
		call := batch.NewCall[step, int64](c.Ctx, step{name: c.Name, by: 1, at: at, extra: c.Extra}, c.Done)
		c.Call, calls[i] = call, call
	}
	s.c.q.Enqueue(calls...)
}

// Result implements hits.Starter: the answer of c's increment, once
// c.Done is closed.
func (s *Store) Result(c *hits.Chain) (int64, error) {
	return answered(c.Call.(*batch.Call[step, int64]).Result())
}

// Await implements hits.Awaiter: a round on one counter, once answered,
// holds the counter's next round while a limits answer with page hits on
// it is on its way (a, see hits.Arrivals), so that those hits join the
// next round rather than wait out the one after it. The rounds of a hot
// page run one after another, so its rate is the hits a round carries over
// the round's time: a hit that misses a round by a little waits a whole
// round more, and each of its connection's hits after it too.
//
// The hold delays every hit of the next round, so it lasts at most the
// round's time that the arriving hits save, shared among the hits it
// delays: the round's time, times the hits arriving over twice the round's
// (those of the next round, and those it answered, which come back as it
// runs), and never more than a quarter of the round's time. A lone hit on
// its way so holds a round of 30 for a sixtieth of it; a pipeline of a
// dozen, for a fifth. A round does not hold at all for hits not due
// within that time by the limits' recent answers (a slow Redis).
func (s *Store) Await(a hits.Arrivals) { s.c.arrivals.Store(&a) }

// await holds round's counter for the hits on their way to it (see
// Store.Await), the round having taken took.
func (c *coalescer) await(a hits.Arrivals, round []*waiter, took time.Duration) {
	name := round[0].Req.name
	for _, w := range round[1:] {
		if w.Req.name != name {
			return // a round of many counters: none of them is that hot
		}
	}
	landed, n, due := a.Arriving(name)
	if landed == nil {
		return
	}
	hold := min(took*time.Duration(n)/time.Duration(2*len(round)), took/4)
	if due > hold {
		return // not worth waiting for
	}
	t := time.NewTimer(hold)
	select {
	case <-landed:
	case <-t.C:
	}
	t.Stop()
}
