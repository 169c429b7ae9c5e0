// Package coalesce turns concurrent increments into few MySQL statements:
// a counters.Store wrapper, added at wiring time in front of the store (and
// its cache), that queues increments while statements run and applies each
// counter's queued steps as one sum. It is tuned to how InnoDB locks rows and
// groups commits; it knows nothing of SQL, Redis or HTTP.
package coalesce

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/internal/foundation/batch"
	"github.com/countersvc/countersvc/internal/foundation/deadline"
)

// Options tune the coalescer.
type Options struct {
	// MaxRound bounds how many queued increments one round (one statement
	// or transaction) carries. Default DefaultMaxRound.
	MaxRound int
	// MaxInFlight bounds how many statements or transactions run at once:
	// how many do, below it, the coalescer finds by measuring what the
	// database answers (batch.Options.Adaptive). Default DefaultMaxInFlight.
	MaxInFlight int
	// MaxPerCounter bounds how many of those touch one counter at once.
	// Default: as many as may run at all, which the queue finds by
	// measuring. InnoDB releases a row's lock before the commit's log
	// flush, so the next statement on a busy counter can run while earlier
	// ones wait for theirs, and their flushes share group commits: how many
	// pay off depends on how long a flush takes against a statement, which
	// differs from one machine to the next as much as the rest does.
	MaxPerCounter int
	// Registerer, when set, gets the coalescer's metrics (see metrics.go).
	Registerer prometheus.Registerer
	// Now is the clock that times increments for their history; the
	// store's, so that both agree. Default time.Now.
	Now func() time.Time
}

// Defaults of Options.
const (
	DefaultMaxRound    = 1024
	DefaultMaxInFlight = 16
)

// Store is a counters.Store whose increments are coalesced; the other
// methods go straight to the store it wraps.
type Store struct {
	counters.Store
	c *coalescer
}

// New wraps store.
func New(store counters.Store, o Options) *Store {
	return &Store{Store: store, c: newCoalescer(store, o)}
}

// Increment implements counters.Store through the queue.
func (s *Store) Increment(ctx context.Context, name string, by int64) (int64, error) {
	return s.c.Increment(ctx, name, by, nil)
}

// IncrementMany implements counters.Store: a lone increment that says
// nothing of when its steps happened, the way of an increment with an
// Extra (see counters.Service.IncrementWith), goes through the queue as
// Increment does, its Extra carried to the round's store write; any other
// goes straight to the store.
func (s *Store) IncrementMany(ctx context.Context, incs []counters.Increment) ([]int64, error) {
	if len(incs) != 1 || incs[0].Parts != nil {
		return s.Store.IncrementMany(ctx, incs)
	}
	v, err := s.c.Increment(ctx, incs[0].Name, incs[0].By, incs[0].Extra)
	if err != nil {
		return nil, err
	}
	return []int64{v}, nil
}

// coalescer turns concurrent increments into few statements. While
// MaxInFlight statements run, further increments queue; the next round takes
// everything queued and applies, per counter, the sum of its increments in
// one LAST_INSERT_ID statement (one counter) or in one transaction (many
// counters). Each waiter gets the value its own increment produced, as if
// the increments had run one after another. There is no timer: a lone
// request goes straight through, so idle latency does not grow, and rounds
// grow only as load does. The queue is internal/foundation/batch's; the coalescer
// decides what a round may carry and how it runs.
type coalescer struct {
	store   counters.Store
	opts    Options
	metrics *metrics
	q       *batch.Queue[step, int64]

	// busy counts the in-flight statements per counter, at most
	// MaxPerCounter or the queue's limit. Guarded by the queue's lock (see
	// batch.Options).
	busy map[string]int
	// arrivals, once set, are the page hits on their way (Store.Await).
	arrivals atomic.Pointer[hits.Arrivals]
}

// step is one queued increment.
type step struct {
	name  string
	by    int64
	at    time.Time      // when it queued: the time it counts at in history
	extra counters.Extra // what else it counts, carried unread; nil: none
}

// waiter is one increment in a round.
type waiter = batch.Call[step, int64]

func newCoalescer(store counters.Store, o Options) *coalescer {
	if o.MaxRound <= 0 {
		o.MaxRound = DefaultMaxRound
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &coalescer{store: store, opts: o, busy: map[string]int{}}
	c.metrics = newMetrics(o.Registerer, func() int { return c.q.Limit() })
	// How many rounds run at once follows the database: one or two large
	// ones where MySQL shares the service's few cores, many where it has
	// cores of its own, a network hop away. A fixed number tuned on one
	// machine is wrong on the other.
	c.q = c.queue(true)
	return c
}

// queue is the coalescer's queue; adaptive makes MaxInFlight a ceiling
// (tests fix the limit at it to see what a limit allows).
func (c *coalescer) queue(adaptive bool) *batch.Queue[step, int64] {
	return batch.New(c.run, batch.Options[step, int64]{
		MaxInFlight: c.opts.MaxInFlight,
		Adaptive:    adaptive,
		// A round beside those in flight only once it would carry as
		// much as they do: smaller rounds cost a statement and a commit
		// each, which on a box shared with MySQL comes out of the load's
		// own cores.
		GrowFull: true,
		// A request that starts a round runs it on its own goroutine:
		// when idle, at once, as if there were no coalescer.
		Inline: true,
		Choose: c.chooser,
		Taken:  func(round []*waiter) { c.hold(round, 1) },
		Done:   func(round []*waiter) { c.hold(round, -1) },
	})
}

// Increment applies by, with extra, to name through the queue.
func (c *coalescer) Increment(ctx context.Context, name string, by int64, extra counters.Extra) (int64, error) {
	return answered(c.q.Do(ctx, step{name: name, by: by, at: c.opts.Now(), extra: extra}))
}

// answered is an increment's answer from the queue, with a call its
// caller stopped waiting for told as unavailable, saying whether it may
// have been applied.
func answered(v int64, err error) (int64, error) {
	if err == nil {
		return v, nil // before errors.As, whose target would escape: an allocation per increment
	}
	var u *batch.Unanswered
	if !errors.As(err, &u) {
		return v, err
	}
	if !u.Sent {
		return 0, counters.Wrap(counters.EUNAVAILABLE, "counters.Increment", u.Err, "The database did not answer in time; nothing was changed.")
	}
	return 0, counters.Wrap(counters.EUNAVAILABLE, "counters.Increment", u.Err, "The database did not answer in time; the change may or may not have been applied.")
}

// chooser picks the next round: up to MaxRound waiters, in arrival order.
// Per counter it takes only a run of increments of one sign (zeros join
// either): the partial sums of such a run lie between the counter's old and
// new value, so if those two are in range every intermediate value was too,
// and the round is equivalent to running its increments one by one. The
// first increment of another sign waits, with all later ones of its counter,
// for the next round.
func (c *coalescer) chooser() func(step) batch.Verdict {
	n := 0
	sign := map[string]int{}
	closed := map[string]bool{}
	perCounter := c.opts.MaxPerCounter
	if perCounter <= 0 {
		perCounter = c.q.Limit()
	}
	return func(w step) batch.Verdict {
		if n >= c.opts.MaxRound {
			return batch.Stop
		}
		s := signOf(w.by)
		if closed[w.name] || c.busy[w.name] >= perCounter || (s != 0 && sign[w.name] != 0 && s != sign[w.name]) {
			closed[w.name] = true
			return batch.Later
		}
		if s != 0 {
			sign[w.name] = s
		}
		n++
		return batch.Take
	}
}

// hold adds d to the in-flight statements of each counter of round.
func (c *coalescer) hold(round []*waiter, d int) {
	for _, name := range uniqueNames(round) {
		if c.busy[name] += d; c.busy[name] <= 0 {
			delete(c.busy, name)
		}
	}
}

func uniqueNames(round []*waiter) []string {
	if len(round) == 1 {
		return []string{round[0].Req.name}
	}
	var names []string
	seen := map[string]bool{}
	for _, w := range round {
		if !seen[w.Req.name] {
			seen[w.Req.name] = true
			names = append(names, w.Req.name)
		}
	}
	return names
}

func signOf(v int64) int {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return -1
	}
	return 0
}

// group is one counter's waiters within a round.
type group struct {
	name    string
	waiters []*waiter
	sum     int64
	ok      bool // false: the sum overflows int64, run one by one
	// parts splits sum by the quarter hour in which its waiters queued,
	// when that is not the one the round runs in (counters.Part); nil
	// otherwise: the store counts the sum at its own clock.
	parts []counters.Part
}

func groupRound(round []*waiter) []*group {
	byName := map[string]*group{}
	var groups []*group
	for _, w := range round {
		g := byName[w.Req.name]
		if g == nil {
			g = &group{name: w.Req.name, ok: true}
			byName[w.Req.name] = g
			groups = append(groups, g)
		}
		g.waiters = append(g.waiters, w)
		if g.ok {
			g.sum, g.ok = counters.Add(g.sum, w.Req.by)
		}
	}
	return groups
}

// run applies one round and answers all its waiters, then holds its
// counter for the page hits on their way to it (Store.Await), since its
// place in flight is given up when it returns. (A request that leads a
// round on its own goroutine, which page hits handed on by their limits
// never do, is answered after the hold.)
func (c *coalescer) run(round []*waiter, alone bool) {
	a := c.arrivals.Load()
	if a == nil || alone {
		c.apply(round, alone)
		return
	}
	began := time.Now()
	c.apply(round, false)
	c.await(*a, round, time.Since(began))
}

// apply applies one round and answers all its waiters. A request that
// found the coalescer idle runs alone, as if there were none, under its
// own context.
func (c *coalescer) apply(round []*waiter, alone bool) {
	if alone {
		w := round[0]
		c.observe("alone", 1)
		if w.Req.extra != nil {
			values, err := c.store.IncrementMany(w.Ctx, []counters.Increment{{Name: w.Req.name, By: w.Req.by, Extra: w.Req.extra}})
			if err != nil {
				w.Answer(0, err)
			} else {
				w.Answer(values[0], nil)
			}
			return
		}
		w.Answer(c.store.Increment(w.Ctx, w.Req.name, w.Req.by))
		return
	}
	ctx, cancel := deadline.Latest(round, func(w *waiter) context.Context { return w.Ctx })
	defer cancel()
	groups := groupRound(round)
	now := c.opts.Now()
	for _, g := range groups {
		if g.ok {
			g.parts = partsOf(g.waiters, now)
		}
	}
	var multi []*group
	for _, g := range groups {
		if g.ok && len(groups) > 1 {
			multi = append(multi, g)
		} else {
			c.runGroup(ctx, g, now)
		}
	}
	if len(multi) == 0 {
		return
	}
	if len(multi) == 1 {
		c.runGroup(ctx, multi[0], now)
		return
	}
	incs := make([]counters.Increment, len(multi))
	for i, g := range multi {
		incs[i] = counters.Increment{Name: g.name, By: g.sum, Parts: g.parts}
	}
	c.observe("many", countWaiters(multi))
	values, err := c.store.IncrementMany(ctx, incs)
	if counters.ErrorCode(err) == counters.EOUTOFRANGE {
		// Some counter's sum breaks a bound or int64: find out which, and
		// what each request would have got alone, counter by counter.
		for _, g := range multi {
			c.runGroup(ctx, g, now)
		}
		return
	}
	for i, g := range multi {
		if err != nil {
			g.fail(err)
		} else {
			g.answer(values[i])
		}
	}
}

// runGroup applies one counter's share: its sum in one statement, or each
// increment alone when the sum cannot tell who would have failed.
func (c *coalescer) runGroup(ctx context.Context, g *group, now time.Time) {
	if g.ok && len(g.waiters) > 0 {
		c.observe("counter", len(g.waiters))
		v, err := c.increment(ctx, g.name, g.sum, g.parts)
		if err == nil {
			g.answer(v)
			return
		}
		if counters.ErrorCode(err) != counters.EOUTOFRANGE || len(g.waiters) == 1 {
			g.fail(err)
			return
		}
	}
	for _, w := range g.waiters {
		c.observe("split", 1)
		w.Answer(c.increment(ctx, g.name, w.Req.by, partsOf([]*waiter{w}, now)))
	}
}

// increment applies one counter's step; with parts, as a round of one
// counter, the store's one way to be told when its steps happened.
func (c *coalescer) increment(ctx context.Context, name string, by int64, parts []counters.Part) (int64, error) {
	if parts == nil {
		return c.store.Increment(ctx, name, by)
	}
	values, err := c.store.IncrementMany(ctx, []counters.Increment{{Name: name, By: by, Parts: parts}})
	if err != nil {
		return 0, err
	}
	return values[0], nil
}

// partsOf splits the steps of waiters (one counter's, of one sign, whose
// sum fits in an int64) by the quarter hour in which each queued and the
// Extra each carried, or returns nil when they all queued in the quarter
// hour of now without one: then the store's clock says when, as for a
// request that did not queue. A round that runs just after a period's end
// so counts what queued before it in that period, each increment in its
// own. Neighbours of one quarter and equal Extra share a part (one
// comparison of two nil interfaces for steps without); the store sums the
// rest per value.
func partsOf(waiters []*waiter, now time.Time) []counters.Part {
	current := now.Truncate(counters.HistoryGrain)
	end := current.Add(counters.HistoryGrain)
	if !slices.ContainsFunc(waiters, func(w *waiter) bool {
		return w.Req.extra != nil || w.Req.at.Before(current) || !w.Req.at.Before(end)
	}) {
		return nil // the hot counter's round: nothing to split, nothing allocated
	}
	parts := make([]counters.Part, 0, len(waiters)) // a part a step at most: one allocation, not one a doubling
	extra := false
	for _, w := range waiters {
		q := w.Req.at.Truncate(counters.HistoryGrain)
		extra = extra || w.Req.extra != nil
		if n := len(parts); n > 0 && parts[n-1].At.Equal(q) && parts[n-1].Extra == w.Req.extra {
			parts[n-1].By += w.Req.by
			continue
		}
		parts = append(parts, counters.Part{At: q, By: w.Req.by, Extra: w.Req.extra})
	}
	if len(parts) == 1 && parts[0].At.Equal(current) && !extra {
		return nil
	}
	return parts
}

func (c *coalescer) observe(kind string, increments int) {
	c.metrics.observe(kind, increments)
}

func countWaiters(groups []*group) int {
	n := 0
	for _, g := range groups {
		n += len(g.waiters)
	}
	return n
}

// answer hands each waiter its own value: the old value plus the steps up
// to and including its own, in arrival order.
func (g *group) answer(newValue int64) {
	v := newValue - g.sum
	for _, w := range g.waiters {
		v += w.Req.by
		w.Answer(v, nil)
	}
}

func (g *group) fail(err error) {
	for _, w := range g.waiters {
		w.Answer(0, err)
	}
}
