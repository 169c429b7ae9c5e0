package hits

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// Starter queues increments without waiting for them: the coalescer,
// behind the cache's lease wait (see internal/wire). Start queues the
// increment of each chain of cs (c.Name by 1, with c.Extra, in c.Ctx),
// all at once, and each answer closes its c.Done; Result then reads it. Each layer keeps what it needs of a
// started increment in the chain itself (Call, Mark), so that starting
// one allocates nothing beside the increment's own queued call.
//
// It lets the limits hand a hit they admit as a first straight on to its
// increment, on the goroutine that read their answer, so that the hit's
// request sleeps once, until its increment is answered, instead of twice
// (on the limits' pipeline, then on the increment's round): one goroutine
// wake-up a hit less, and a pipeline's hits reach the coalescer together.
//
// The limits hand on the hits of one answer together: the coalescer then
// takes its lock once, and starts one round for them rather than waking a
// sender for the first and perhaps another beside it for the next.
type Starter interface {
	Start(cs []*Chain)
	Result(c *Chain) (int64, error)
}

// Arrivals say which increments are on their way to a Starter: those of
// the hits whose limits' answer is travelling back from Redis, which will
// start them on arrival (see Starter).
type Arrivals interface {
	// Arriving returns a channel that is closed once some increments of
	// name on their way now have been started or left behind, how many
	// they are (at most), and in how long they are expected; nil when none
	// is on its way.
	Arriving(name string) (landed <-chan struct{}, n int, due time.Duration)
}

// Awaiter is a Starter that may hold its next round on a counter for the
// increments on their way to it (the coalescer: see its Await). The
// limits' store tells it of them when the two are joined.
type Awaiter interface {
	Await(Arrivals)
}

// Chain is a hit's increment, which Limits.Admit starts when it admits
// the hit as a first (see Hit.Chain).
type Chain struct {
	// Done is the channel the hit waits on: Admit's answer, or, once the
	// increment is started, the increment's.
	Done chan struct{}
	// The increment: Ctx is its request's context.
	Ctx   context.Context
	Name  string
	Extra counters.Extra
	// Call and Mark are the Starter's: what its layers keep of the
	// started increment until its Result (the queued call, a count).
	Call any
	Mark uint64

	starter Starter
	state   atomic.Int32 // chainIdle, then chainStarted or chainLeft
}

// States of a Chain: the limits start it, or the hit leaves without it,
// whichever comes first.
const (
	chainIdle int32 = iota
	chainStarted
	chainLeft
)

// Claim takes the hit's increment for the limits to start (Start), unless
// the hit has gone on without it: false, and the limits answer the hit as
// they would have. Admit calls it on the goroutine that read the limits'
// answer, instead of answering the hit.
func (c *Chain) Claim() bool {
	return c.state.CompareAndSwap(chainIdle, chainStarted)
}

// Start queues the increments of cs, each claimed (Claim), those of one
// service together (see Starter).
func Start(cs []*Chain) {
	for len(cs) > 0 {
		n := 1
		for n < len(cs) && cs[n].starter == cs[0].starter {
			n++
		}
		cs[0].starter.Start(cs[:n])
		cs = cs[n:]
	}
}

// started reports whether the limits started the increment; if they have
// not, they no longer can.
func (c *Chain) started() bool {
	return !c.state.CompareAndSwap(chainIdle, chainLeft)
}

// chainOf is v's increment for the limits to start, or nil when this
// service starts none (no Starter, or a name the increment would refuse,
// whose error the ordinary way reports). bot is set to what its labels
// say of the agent.
func (s *Service) chainOf(ctx context.Context, v Visit, bot *crawler) *Chain {
	if s.chain == nil || counters.ValidateName(v.Name) != nil {
		return nil
	}
	c := &Chain{Done: make(chan struct{}), Ctx: ctx, Name: v.Name, starter: s.chain}
	c.Extra, *bot = s.labelled(v)
	return c
}

// chained waits for the increment the limits started and returns its
// answer. The increment's queue answers every increment it is given, in
// the time its request's context leaves it (see batch.Enqueue).
func chained(c *Chain) (int64, error) {
	<-c.Done
	return c.starter.Result(c)
}

// NewChain is a chain whose Start runs start (once for each Start it is
// in), for tests of a Limits.
func NewChain(start func()) *Chain {
	return &Chain{Done: make(chan struct{}), starter: &funcStarter{start}}
}

// funcStarter starts a test's chains (see NewChain); a pointer, so that
// Start can tell starters apart.
type funcStarter struct{ start func() }

func (f *funcStarter) Start([]*Chain)             { f.start() }
func (*funcStarter) Result(*Chain) (int64, error) { return 0, nil }
