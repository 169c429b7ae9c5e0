package coalesce

import (
	"context"
	"errors"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/foundation/batch"
)

// Start queues an increment of name by by, with extra, without waiting:
// its answer closes done, and *result, set before it is queued, reads it
// then.
func (s *Store) Start(ctx context.Context, name string, by int64, extra counters.Extra, done chan struct{}, result *func() (int64, error)) {
	c := batch.NewCall[step, int64](ctx, step{name: name, by: by, at: s.c.opts.Now(), extra: extra}, done)
	*result = func() (int64, error) {
		v, err := c.Result()
		var u *batch.Unanswered
		if err == nil || !errors.As(err, &u) {
			return v, err
		}
		return 0, counters.Wrap(counters.EUNAVAILABLE, "counters.Increment", u.Err, "The database did not answer in time; nothing was changed.")
	}
	s.c.q.Enqueue(c)
}
