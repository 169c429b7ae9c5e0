package coalesce

import (
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/internal/foundation/batch"
)

// Start implements hits.Starter: it queues an increment of c.Name by 1,
// with c.Extra, without waiting; its answer closes c.Done. c.Call keeps
// the queued call for Result.
func (s *Store) Start(c *hits.Chain) {
	call := batch.NewCall[step, int64](c.Ctx, step{name: c.Name, by: 1, at: s.c.opts.Now(), extra: c.Extra}, c.Done)
	c.Call = call
	s.c.q.Enqueue(call)
}

// Result implements hits.Starter: the answer of c's increment, once
// c.Done is closed.
func (s *Store) Result(c *hits.Chain) (int64, error) {
	return answered(c.Call.(*batch.Call[step, int64]).Result())
}
