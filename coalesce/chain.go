package coalesce

import (
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
