package hits_test

import (
	"context"
	"time"

	"github.com/countersvc/countersvc/hits"
)

// chainingLimits are fakeLimits that start the increment of a hit they
// admit as a first, as the cache's limits do, instead of answering it.
type chainingLimits struct{ *fakeLimits }

func (c chainingLimits) Admit(ctx context.Context, h hits.Hit) (time.Duration, hits.Earlier, error) {
	wait, earlier, err := c.fakeLimits.Admit(ctx, h)
	if err == nil && wait == 0 && earlier == hits.None && h.Chain != nil && h.Chain.Claim() {
		hits.Start([]*hits.Chain{h.Chain})
		return 0, hits.None, nil
	}
	return wait, earlier, err
}

// fakeStarter increments store at once, and closes the chain's Done.
type fakeStarter struct {
	store   *fakeCounters
	started int
}

// fakeResult is a started increment's answer, kept in its chain.
type fakeResult struct {
	v   int64
	err error
}

func (f *fakeStarter) Start(cs []*hits.Chain) {
	for _, c := range cs {
		f.started++
		v, err := f.store.IncrementWith(c.Ctx, c.Name, 1, c.Extra)
		c.Call = fakeResult{v, err}
		close(c.Done)
	}
}

func (f *fakeStarter) Result(c *hits.Chain) (int64, error) {
	r := c.Call.(fakeResult)
	return r.v, r.err
}
