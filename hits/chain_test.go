package hits_test

import (
	"context"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
)

// chainingLimits are fakeLimits that start the increment of a hit they
// admit as a first, as the cache's limits do, instead of answering it.
type chainingLimits struct{ *fakeLimits }

func (c chainingLimits) Admit(ctx context.Context, h hits.Hit) (time.Duration, hits.Earlier, error) {
	wait, earlier, err := c.fakeLimits.Admit(ctx, h)
	if err == nil && wait == 0 && earlier == hits.None && h.Chain != nil && h.Chain.Start() {
		return 0, hits.None, nil
	}
	return wait, earlier, err
}

// fakeStarter increments store at once, and closes done.
type fakeStarter struct {
	store   *fakeCounters
	started int
}

func (f *fakeStarter) Start(ctx context.Context, name string, by int64, extra counters.Extra, done chan struct{}, result *func() (int64, error)) {
	f.started++
	v, err := f.store.IncrementWith(ctx, name, by, extra)
	*result = func() (int64, error) { return v, err }
	close(done)
}
