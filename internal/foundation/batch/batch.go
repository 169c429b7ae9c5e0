// Package batch runs the work of concurrent callers in batches: calls that
// arrive while a batch is in flight wait, the next batch takes them together
// as one unit of work (one statement, one pipeline), and each caller gets
// its own answer. There is no timer: a call that finds the queue idle goes
// at once, so a lone caller waits for nobody, and batches grow only as load
// does. It is the one queue of the service (coalesced increments, ticket
// group commits, Redis pipelines); what a batch does, and how many calls it
// may carry, is its user's business, so it knows nothing of SQL or Redis.
package batch

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// A Call is one caller's request, as the batch that takes it sees it.
type Call[T, R any] struct {
	Ctx context.Context
	Req T

	state atomic.Int32
	res   R
	err   error
	done  chan struct{} // closed when answered; nil for a call run inline
	// queued by Enqueue: no caller waits for it but on done, so the queue
	// answers it also when it leaves it out (see take).
	enqueued bool
}

// States of a call. Its caller may withdraw it only while it is queued;
// once a batch has taken it, its answer is the batch's.
const (
	queued int32 = iota
	taken
	dropped // withdrawn by its caller, or left out by the queue: never sent
)

// Answer gives the call its result. The batch that took a call answers it
// exactly once.
func (c *Call[T, R]) Answer(res R, err error) {
	c.res, c.err = res, err
	if c.done != nil {
		close(c.done)
	}
}

// Unanswered is the error of a call that got no answer: its context ended
// first, or the queue's Choose found it out of time. Sent says whether a
// batch had already taken it: then it may have had its effect, else it
// certainly had none.
type Unanswered struct {
	Err  error
	Sent bool
}

func (u *Unanswered) Error() string { return u.Err.Error() }
func (u *Unanswered) Unwrap() error { return u.Err }

// A Verdict is what Choose says of one waiting call.
type Verdict int

const (
	// Take puts the call into the batch.
	Take Verdict = iota
	// Later leaves the call for a later batch, and looks at the next one.
	Later
	// Stop leaves the call, and all after it, for a later batch: this one
	// is full.
	Stop
	// Expire answers the call at once, unsent, with an Unanswered of
	// context.DeadlineExceeded: it ran out of a time of its own, not its
	// context's (those the queue leaves out itself).
	Expire
)

// Options shape a Queue. The zero value runs one batch at a time, of every
// call that waits.
type Options[T, R any] struct {
	// MaxInFlight bounds the batches that run at once. Default 1.
	MaxInFlight int
	// Adaptive makes MaxInFlight a ceiling: how many batches run at once
	// is then found by measuring throughput (see climber), starting at
	// one; GrowAt still decides when the limit's room is taken.
	Adaptive bool
	// GrowAt is how many calls must wait per batch in flight before
	// another batch starts beside them; below it, waiting calls join the
	// batch after the one in flight, which makes batches larger (each
	// batch costs its fixed work once, however many calls it carries).
	// Default 1.
	GrowAt int
	// GrowFull raises GrowAt's bar to the calls that the batches in flight
	// carry on average: another batch starts beside them only when it
	// would carry as many. A batch started sooner makes every batch after
	// it smaller, and each costs its fixed work whatever it carries. Where
	// callers wait on the batches' latency (a server with cores of its
	// own, a network hop away), that many pile up while a batch runs and
	// batches still multiply up to the limit; where the service and the
	// server share a few busy cores, the callers are mostly being served
	// elsewhere, few pile up, and the batches in flight stay few and large.
	GrowFull bool
	// Inline runs a batch that a caller starts on the caller's own
	// goroutine, and saves the hand-over to another goroutine and back: a
	// call that finds the queue idle as a batch of one (run is told it is
	// alone), and, with Adaptive, a call that finds room for another batch
	// with whatever waits beside it.
	Inline bool
	// WaitSent makes a caller whose context ends after a batch took its
	// call wait for the batch's answer, which is then never a guess;
	// otherwise it leaves with an Unanswered that says it was sent.
	WaitSent bool
	// Choose, when set, returns the chooser of one batch, which is asked
	// about each waiting call in arrival order (calls whose context has
	// ended are left out before it). Default: take them all.
	Choose func() func(req T) Verdict
	// Linger is how long a sender that finds the queue empty waits for
	// the next call before it ends. A sender started afresh for every busy
	// spell starts on a small stack and grows it again each time (a Redis
	// pipeline's sender runs deep in go-redis); one that lingers keeps it.
	// It waits for nothing else: a call that arrives wakes it at once.
	// Default 0: a sender ends as soon as the queue is empty.
	Linger time.Duration
	// Taken and Done are told of each batch when it is taken and when it
	// has run. They, the chooser, and Choose run under the queue's lock: the
	// state they share (say, what is in flight) needs no lock of its own.
	Taken, Done func(batch []*Call[T, R])
}

// A Queue batches calls for run, which must answer every call it is given.
type Queue[T, R any] struct {
	run func(batch []*Call[T, R], alone bool)
	o   Options[T, R]

	mu       sync.Mutex
	pending  []*Call[T, R]
	inFlight int
	carried  int      // calls in the batches in flight (Options.GrowFull)
	climber  *climber // with Options.Adaptive
	// limit mirrors what Limit answers, so that it can be read without
	// mu, also by a chooser (which runs under it).
	limit atomic.Int32
	// stuck says that the last batch a caller tried to lead found nothing
	// the chooser would take (say, every waiting call's counter is busy):
	// until a batch ends, only a call the chooser takes leads another,
	// rather than every arrival scanning the queue in vain.
	stuck  bool
	parked int           // lingering senders no call has woken yet
	wake   chan struct{} // one token a woken sender; capacity MaxInFlight
}

// New returns a queue whose batches run does; alone says that the batch is
// one call run inline on its caller's goroutine (Options.Inline).
func New[T, R any](run func(batch []*Call[T, R], alone bool), o Options[T, R]) *Queue[T, R] {
	o.MaxInFlight = max(o.MaxInFlight, 1)
	o.GrowAt = max(o.GrowAt, 1)
	q := &Queue[T, R]{run: run, o: o, wake: make(chan struct{}, o.MaxInFlight)}
	q.limit.Store(int32(o.MaxInFlight))
	if o.Adaptive {
		q.climber = newClimber(o.MaxInFlight)
		q.limit.Store(int32(q.climber.limit))
	}
	return q
}

// Do queues req and waits for its answer, or until ctx ends (an
// *Unanswered, unless Options.WaitSent).
func (q *Queue[T, R]) Do(ctx context.Context, req T) (R, error) {
	return q.do(&Call[T, R]{Ctx: ctx, Req: req}, nil)
}

func (q *Queue[T, R]) do(c *Call[T, R], done chan struct{}) (R, error) {
	ctx := c.Ctx
	q.mu.Lock()
	if q.o.Inline && q.inFlight == 0 && q.chosen(c) {
		q.inFlight++
		q.runInline([]*Call[T, R]{c}, true)
		return c.res, c.err
	}
	c.done = done
	if c.done == nil {
		c.done = make(chan struct{})
	}
	q.pending = append(q.pending, c)
	switch {
	case !q.room():
		q.heldBack()
		q.mu.Unlock()
	case q.o.Inline && q.climber != nil:
		if q.stuck && !q.takes(c) {
			q.mu.Unlock()
			break
		}
		q.inFlight++
		q.lead(c)
	default:
		q.inFlight++
		q.send()
		q.mu.Unlock()
	}

	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
	}
	var zero R
	if c.state.CompareAndSwap(queued, dropped) || c.state.Load() == dropped {
		return zero, &Unanswered{Err: ctx.Err()}
	}
	if q.o.WaitSent {
		<-c.done
		return c.res, c.err
	}
	return zero, &Unanswered{Err: ctx.Err(), Sent: true}
}

// chosen says whether the chooser takes c, alone, into a batch of its own,
// and marks it taken. Caller holds mu.
func (q *Queue[T, R]) chosen(c *Call[T, R]) bool {
	if q.o.Choose != nil && q.o.Choose()(c.Req) != Take {
		return false
	}
	c.state.Store(taken)
	return true
}

// takes says whether the chooser would take c into a batch of its own.
// Caller holds mu.
func (q *Queue[T, R]) takes(c *Call[T, R]) bool {
	return q.o.Choose == nil || q.o.Choose()(c.Req) == Take
}

func (q *Queue[T, R]) took(batch []*Call[T, R]) {
	q.carried += len(batch)
	if q.o.Taken != nil {
		q.o.Taken(batch)
	}
}

func (q *Queue[T, R]) ran(batch []*Call[T, R]) {
	q.stuck = false
	q.carried -= len(batch)
	if q.o.Done != nil {
		q.o.Done(batch)
	}
	if q.climber != nil {
		q.climber.ran(len(batch), time.Now())
		q.limit.Store(int32(q.climber.limit))
	}
}

// room says whether a call just queued may start another batch. Caller
// holds mu.
func (q *Queue[T, R]) room() bool {
	limit := q.o.MaxInFlight
	if q.climber != nil {
		limit = q.climber.limit
	}
	if q.inFlight >= limit || len(q.pending) < q.o.GrowAt*q.inFlight {
		return false
	}
	// The average batch in flight carries carried/inFlight calls.
	return !q.o.GrowFull || len(q.pending)*q.inFlight >= q.carried
}

// heldBack tells the climber that the limit kept a call waiting. Caller
// holds mu.
func (q *Queue[T, R]) heldBack() {
	if q.climber != nil && q.inFlight >= q.climber.limit {
		q.climber.queued = true
	}
}

// Limit is how many batches may run at once now: MaxInFlight, or what
// the queue has found with Adaptive. A chooser may call it.
func (q *Queue[T, R]) Limit() int { return int(q.limit.Load()) }

// lead runs, on the goroutine of the caller whose call c took a place in
// flight, the next batch (with c in it unless the chooser left it for
// later), then hands the place on as an inline batch does. It unlocks mu.
func (q *Queue[T, R]) lead(c *Call[T, R]) {
	batch := q.take()
	if len(batch) == 0 {
		q.inFlight--
		q.stuck = true
		q.mu.Unlock()
		return
	}
	q.runInline(batch, len(batch) == 1 && batch[0] == c)
}

// runInline runs batch, taken on a place in flight, on the caller's
// goroutine; calls that queued meanwhile keep that place (a sender takes
// it on), else it is given up. Caller holds mu, which it unlocks.
func (q *Queue[T, R]) runInline(batch []*Call[T, R], alone bool) {
	q.took(batch)
	q.mu.Unlock()
	q.run(batch, alone)
	q.mu.Lock()
	q.ran(batch)
	if len(q.pending) > 0 {
		q.send()
	} else {
		q.inFlight--
	}
	q.mu.Unlock()
}

// send puts a sender to work on the place in flight its caller took: a
// lingering one if there is, else a new one. Caller holds mu.
func (q *Queue[T, R]) send() {
	if q.parked > 0 {
		q.parked--
		q.wake <- struct{}{}
		return
	}
	go q.drain()
}

// drain runs batches until none is left to take, then gives up its place,
// and lingers (Options.Linger) in case a call wakes it for another spell.
func (q *Queue[T, R]) drain() {
	var idle *time.Timer
	q.mu.Lock()
	for {
		batch := q.take()
		if len(batch) == 0 {
			q.inFlight--
			if q.linger(&idle) {
				continue // a caller gave it a place in flight again
			}
			q.mu.Unlock()
			return
		}
		q.took(batch)
		q.mu.Unlock()
		q.run(batch, false)
		q.mu.Lock()
		q.ran(batch)
	}
}

// linger waits, without mu, until a caller wakes the sender (true) or
// Options.Linger passes (false). Caller holds mu, and does on return.
func (q *Queue[T, R]) linger(idle **time.Timer) bool {
	if q.o.Linger <= 0 {
		return false
	}
	q.parked++
	q.mu.Unlock()
	if *idle == nil {
		*idle = time.NewTimer(q.o.Linger)
	} else {
		(*idle).Reset(q.o.Linger)
	}
	select {
	case <-q.wake:
		q.mu.Lock()
		return true
	case <-(*idle).C:
	}
	q.mu.Lock()
	select {
	case <-q.wake: // a caller woke it as it gave up
		return true
	default:
		q.parked--
		return false
	}
}

// take removes the next batch from the queue, in arrival order, leaving out
// the calls whose callers have left or whose context has ended. Caller
// holds mu.
func (q *Queue[T, R]) take() []*Call[T, R] {
	var choose func(T) Verdict
	if q.o.Choose != nil {
		choose = q.o.Choose()
	}
	var batch []*Call[T, R]
	rest := q.pending[:0]
	full := false
	for _, c := range q.pending {
		switch {
		case full:
			rest = append(rest, c)
			continue
		case c.state.Load() != queued:
			continue // withdrawn by its caller
		case c.Ctx.Err() != nil:
			// Its caller is leaving: it finds the call dropped. One
			// that waits on done alone (Enqueue) is told so there.
			if c.state.CompareAndSwap(queued, dropped) && c.enqueued {
				var zero R
				c.Answer(zero, &Unanswered{Err: c.Ctx.Err()})
			}
			continue
		}
		v := Take
		if choose != nil {
			v = choose(c.Req)
		}
		switch v {
		case Take:
			if c.state.CompareAndSwap(queued, taken) {
				batch = append(batch, c)
			}
		case Later:
			rest = append(rest, c)
		case Stop:
			full = true
			rest = append(rest, c)
		case Expire:
			if c.state.CompareAndSwap(queued, dropped) {
				var zero R
				c.Answer(zero, &Unanswered{Err: context.DeadlineExceeded})
			}
		}
	}
	clear(q.pending[len(rest):])
	q.pending = rest
	return batch
}

// Len is how many calls wait to be taken (including any whose callers have
// just left).
func (q *Queue[T, R]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}
