// Package coalesce turns concurrent increments into few MySQL statements:
// a counters.Store wrapper, added at wiring time in front of the store (and
// its cache), that queues increments while statements run and applies each
// counter's queued steps as one sum. It is tuned to how InnoDB locks rows and
// groups commits; it knows nothing of SQL, Redis or HTTP.
package coalesce

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"countersvc/counters"
	"countersvc/internal/deadline"
)

// Options tune the coalescer.
type Options struct {
	// MaxRound bounds how many queued increments one round (one statement
	// or transaction) carries. Default DefaultMaxRound.
	MaxRound int
	// MaxInFlight bounds how many statements or transactions run at once.
	// Default DefaultMaxInFlight.
	MaxInFlight int
	// MaxPerCounter bounds how many of those touch one counter at once.
	// Default 2: InnoDB releases the row lock before the commit's log flush,
	// so a second statement can take the lock while the first one's flush
	// is under way, and both flushes share one group commit.
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
	DefaultMaxInFlight = 4
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
	return s.c.Increment(ctx, name, by)
}

// coalescer turns concurrent increments into few statements. While
// MaxInFlight statements run, further increments queue; the next round takes
// everything queued and applies, per counter, the sum of its increments in
// one LAST_INSERT_ID statement (one counter) or in one transaction (many
// counters). Each waiter gets the value its own increment produced, as if
// the increments had run one after another. There is no timer: a lone
// request goes straight through, so idle latency does not grow, and rounds
// grow only as load does.
type coalescer struct {
	store   counters.Store
	opts    Options
	metrics *metrics

	mu       sync.Mutex
	pending  []*waiter
	inFlight int
	// busy counts the in-flight statements per counter, at most
	// MaxPerCounter: more would only queue on the row lock, while their
	// increments could have joined a later, larger round.
	busy map[string]int
}

type waiter struct {
	ctx   context.Context
	name  string
	by    int64
	at    time.Time // when it queued: the time it counts at in history
	taken bool      // removed from pending by a round; guarded by coalescer.mu
	done  chan result
}

type result struct {
	value int64
	err   error
}

func newCoalescer(store counters.Store, o Options) *coalescer {
	if o.MaxRound <= 0 {
		o.MaxRound = DefaultMaxRound
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.MaxPerCounter <= 0 {
		o.MaxPerCounter = 2
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &coalescer{store: store, opts: o, busy: map[string]int{}, metrics: newMetrics(o.Registerer)}
}

// Increment applies by to name through the queue.
func (c *coalescer) Increment(ctx context.Context, name string, by int64) (int64, error) {
	c.mu.Lock()
	if c.inFlight == 0 {
		// Idle: run the statement now, on this goroutine.
		c.inFlight++
		c.busy[name]++
		c.mu.Unlock()
		c.observe("alone", 1)
		v, err := c.store.Increment(ctx, name, by)
		c.finish(name)
		return v, err
	}
	w := &waiter{ctx: ctx, name: name, by: by, at: c.opts.Now(), done: make(chan result, 1)}
	c.pending = append(c.pending, w)
	if c.inFlight < c.opts.MaxInFlight && len(c.pending) >= spawnAt*c.inFlight {
		c.inFlight++
		go c.drain()
	}
	c.mu.Unlock()

	select {
	case r := <-w.done:
		return r.value, r.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !w.taken {
		c.pending = slices.DeleteFunc(c.pending, func(p *waiter) bool { return p == w })
		return 0, counters.Wrap(counters.EUNAVAILABLE, "counters.Increment", ctx.Err(), "The database did not answer in time; nothing was changed.")
	}
	return 0, counters.Wrap(counters.EUNAVAILABLE, "counters.Increment", ctx.Err(), "The database did not answer in time; the change may or may not have been applied.")
}

// spawnAt is how many increments must be queued per statement in flight
// before another statement starts beside them. Below it, the queue waits
// for a running round to end and joins the next one: fewer, larger rounds,
// which is what makes a commit cheap per increment, since a statement and
// its commit cost the server far more than one more row in it. The queue
// still grows a second statement when one stalls, say on a row lock.
const spawnAt = 64

// finish ends an inline statement: if increments queued meanwhile, this
// slot keeps draining them on a new goroutine.
func (c *coalescer) finish(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.release(name)
	if len(c.pending) > 0 {
		go c.drain()
		return
	}
	c.inFlight--
}

// drain runs rounds until the queue is empty, then gives up its slot.
func (c *coalescer) drain() {
	for {
		c.mu.Lock()
		round := c.takeRound()
		if len(round) == 0 {
			c.inFlight--
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		c.run(round)
		c.mu.Lock()
		for _, g := range uniqueNames(round) {
			c.release(g)
		}
		c.mu.Unlock()
	}
}

// takeRound removes up to MaxRound waiters from the queue, in arrival order.
// Per counter it takes only a run of increments of one sign (zeros join
// either): the partial sums of such a run lie between the counter's old and
// new value, so if those two are in range every intermediate value was too,
// and the round is equivalent to running its increments one by one. The
// first increment of another sign waits, with all later ones of its counter,
// for the next round. Caller holds mu.
func (c *coalescer) takeRound() []*waiter {
	var round []*waiter
	sign := map[string]int{}
	closed := map[string]bool{}
	rest := c.pending[:0]
	for _, w := range c.pending {
		if w.ctx.Err() != nil && !w.taken {
			// Its caller is leaving (or has left) without an answer; it
			// removes itself, never count it.
			rest = append(rest, w)
			continue
		}
		s := signOf(w.by)
		if len(round) >= c.opts.MaxRound || closed[w.name] || c.busy[w.name] >= c.opts.MaxPerCounter ||
			(s != 0 && sign[w.name] != 0 && s != sign[w.name]) {
			closed[w.name] = true
			rest = append(rest, w)
			continue
		}
		if s != 0 {
			sign[w.name] = s
		}
		w.taken = true
		round = append(round, w)
	}
	for _, name := range uniqueNames(round) {
		c.busy[name]++
	}
	clear(c.pending[len(rest):])
	c.pending = rest
	return round
}

// release ends one in-flight statement of name. Caller holds mu.
func (c *coalescer) release(name string) {
	if c.busy[name]--; c.busy[name] <= 0 {
		delete(c.busy, name)
	}
}

func uniqueNames(round []*waiter) []string {
	var names []string
	seen := map[string]bool{}
	for _, w := range round {
		if !seen[w.name] {
			seen[w.name] = true
			names = append(names, w.name)
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
		g := byName[w.name]
		if g == nil {
			g = &group{name: w.name, ok: true}
			byName[w.name] = g
			groups = append(groups, g)
		}
		g.waiters = append(g.waiters, w)
		if g.ok {
			g.sum, g.ok = counters.Add(g.sum, w.by)
		}
	}
	return groups
}

// run applies one round and answers all its waiters.
func (c *coalescer) run(round []*waiter) {
	ctx, cancel := deadline.Latest(round, func(w *waiter) context.Context { return w.ctx })
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
		v, err := c.increment(ctx, g.name, w.by, partsOf([]*waiter{w}, now))
		w.done <- result{value: v, err: err}
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
// sum fits in an int64) by the quarter hour in which each queued, or
// returns nil when they all queued in the quarter hour of now: then the
// store's clock says when, as for a request that did not queue. A round
// that runs just after a period's end so counts what queued before it in
// that period, each increment in its own.
func partsOf(waiters []*waiter, now time.Time) []counters.Part {
	current := now.Truncate(counters.HistoryGrain)
	var parts []counters.Part
	for _, w := range waiters {
		q := w.at.Truncate(counters.HistoryGrain)
		if n := len(parts); n > 0 && parts[n-1].At.Equal(q) {
			parts[n-1].By += w.by
			continue
		}
		parts = append(parts, counters.Part{At: q, By: w.by})
	}
	if len(parts) == 1 && parts[0].At.Equal(current) {
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
		v += w.by
		w.done <- result{value: v}
	}
}

func (g *group) fail(err error) {
	for _, w := range g.waiters {
		w.done <- result{err: err}
	}
}
