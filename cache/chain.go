package cache

import (
	"github.com/countersvc/countersvc/hits"
)

// Starter is next (the coalescer) behind this store's lease wait, as the
// counters service's increments are (see Backend): an increment that
// failed drops its counter's entry, and one whose invalidation Redis did
// not confirm waits the lease out, on the hit's own goroutine, before the
// hit is answered. The page hits' limits start their admitted hits'
// increments through it (see hits.Starter), and tell next of those on
// their way when it awaits them (hits.Awaiter).
func (s *Store) Starter(next hits.Starter) hits.Starter {
	if a, ok := next.(hits.Awaiter); ok {
		a.Await(s.arrivals)
	}
	return leased{next, s}
}

type leased struct {
	next hits.Starter
	s    *Store
}

// Start implements hits.Starter: each chain's Mark keeps the count of
// unconfirmed invalidations before the increments, for Result.
func (l leased) Start(cs []*hits.Chain) {
	mark := l.s.unconfirmed.Load()
	for _, c := range cs {
		c.Mark = mark
	}
	l.next.Start(cs)
}

// Result implements hits.Starter.
func (l leased) Result(c *hits.Chain) (int64, error) {
	defer l.s.after(c.Mark)
	v, err := l.next.Result(c)
	l.s.unsure(c.Ctx, err, c.Name)
	return v, err
}
