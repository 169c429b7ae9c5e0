package cache

import (
	"context"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
)

// Starter is next (the coalescer) behind this store's lease wait, as the
// counters service's increments are (see Backend): an increment that
// failed drops its counter's entry, and one whose invalidation Redis did
// not confirm waits the lease out, on the hit's own goroutine, before the
// hit is answered. The page hits' limits start their admitted hits'
// increments through it (see hits.Starter).
func (s *Store) Starter(next hits.Starter) hits.Starter { return leased{next, s} }

type leased struct {
	next hits.Starter
	s    *Store
}

// Start implements hits.Starter.
func (l leased) Start(ctx context.Context, name string, by int64, extra counters.Extra, done chan struct{}, result *func() (int64, error)) {
	before := l.s.unconfirmed.Load()
	var inner func() (int64, error)
	*result = func() (int64, error) {
		defer l.s.after(before)
		v, err := inner()
		l.s.unsure(ctx, err, name)
		return v, err
	}
	l.next.Start(ctx, name, by, extra, done, &inner)
}
