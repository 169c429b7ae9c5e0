package cache

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/internal/foundation/batch"
)

// Pipeline bounds. Commands that arrive while pipelines travel wait at
// most one round trip and then leave together. How many pipelines travel
// at once follows Redis's throughput (batch.Options.Adaptive), up to
// maxSenders: on a small box one, since more would split the queue into
// pipelines of about one command each, which costs as much as sending
// every command alone; on a big one, a second while Redis works on the
// first, so that one Redis core is never left waiting on the service. A
// pipeline may fix the number instead (pipeline.senders: the page-hit
// limits', see hitsSenders).
//
// The request that finds room for a pipeline sends it on its own
// goroutine (batch.Options.Inline), with whatever queued beside it: a
// hand-over to a sender and back would cost each pipeline two more
// goroutine wake-ups (cmd/bench -scenario cost counts them). The pipelines
// that queue meanwhile go with a sender, which lingers a while after the
// queue empties, so that the next busy spell does not start a new
// goroutine: under the bench's page hits most pipelines began a spell, and
// each new sender grew its stack again for go-redis (runtime.newstack, 2-4%
// of the service's CPU).
const (
	maxSenders   = 4
	maxPipeline  = 256
	senderLinger = time.Second
)

// pipeline sends the Redis work of concurrent requests together, as one
// pipeline: on a busy server a request then costs a fraction of a system
// call on either side instead of a write and a read of its own, which is
// most of what a cached read or a page hit's limits cost. It never waits for
// company: a pipeline leaves as soon as a sender is free, so a lone request
// pays one round trip and requests that arrive while a pipeline is in flight
// form the next (internal/foundation/batch's queue). The entry reads (HMGET) and the
// page-hit limits each have one.
//
// A request is a command (call), or a call of the pipeline's script on the
// request's keys and arguments (callScript). With merge set, the script
// calls of a pipeline go as one call on all their keys and arguments, in
// order: Redis then runs the script
// once for many requests, which costs it a fraction of one run each. That
// needs every key on one server, so it is not for Redis Cluster.
//
// Each request gives up one timeout after it arrived, also when it first
// waits for the pipeline in flight: a pipeline's deadline is that of its
// earliest request.
//
// go-redis's AutoPipeline does the like, but is marked experimental and its
// callers cannot give up waiting; this is the small part we need.
//
// Pipelining changes nothing for coherence: a command joins a pipeline that
// has not been sent yet, so Redis runs it after the request arrived.
type pipeline struct {
	calls *redisCalls
	op    string // what its failures are counted as

	script   *redis.Script // of callScript
	args     []any         // the script's first arguments, the same for every call
	width    int           // keys of each script call
	argWidth int           // arguments of each script call, after args
	answer   int           // numbers the script answers each call
	merge    bool          // one script call for a whole pipeline
	// growAt, when set, is how many requests must wait per pipeline in
	// flight before another leaves beside it (batch.Options.GrowAt), below
	// the limit Redis's throughput sets (see the constants).
	growAt int
	// senders, when set, is how many pipelines may travel at once, fixed
	// rather than found by the queue's climber (see the constants).
	senders int
	// arrivals, when set, are told of each pipeline with page hits whose
	// increments its answer may start (the limits').
	arrivals *arrivals

	q *batch.Queue[*queued, struct{}]
}

type queued struct {
	deadline time.Time
	add      func(context.Context, redis.Pipeliner) redis.Cmder // a command
	keys     []string                                           // or a script call on keys
	args     []any                                              // with these arguments after the pipeline's own
	key      [1]string                                          // keys' memory for a call on one key (the page-hit limits')
	arg      [1]any                                             // and args' for one argument

	cmd redis.Cmder
	at  int // where the answers of a script call start in cmd's reply

	// A script call's reply as numbers, with the error of reading it:
	// the calls of a merged pipeline share one (see answer).
	answers   []int64
	answerErr error

	// chain, when set, is the page hit's increment, which the sender
	// starts when the call's first answer admits the hit as a first
	// (hits.None); the call is then handed on, and its done channel (the
	// chain's) left for the increment's queue to close.
	chain *hits.Chain
	done  chan struct{}
}

// newPipeline readies p's queue.
func newPipeline(p pipeline) *pipeline {
	senders, adaptive := maxSenders, true
	if p.senders > 0 {
		senders, adaptive = p.senders, false
	}
	p.q = batch.New(p.send, batch.Options[*queued, struct{}]{MaxInFlight: senders, Adaptive: adaptive, GrowAt: p.growAt, Inline: true, Linger: senderLinger, Choose: chooser})
	return &p
}

// call queues the command that add puts into a pipeline and waits for its
// answer, or until ctx ends. The command's own error is in the Cmder; err
// is for a command that was not answered (Redis failed, or the circuit is
// open).
func (p *pipeline) call(ctx context.Context, add func(context.Context, redis.Pipeliner) redis.Cmder) (redis.Cmder, error) {
	q := &queued{add: add, deadline: time.Now().Add(p.calls.timeout)}
	if err := p.wait(ctx, q); err != nil {
		return nil, err
	}
	return q.cmd, nil
}

// callScript runs the pipeline's script on keys (p.width of them), with
// args after the pipeline's own arguments (p.argWidth of them), and returns
// its p.answer answers. It gives up one timeout after since, when the
// request began its work with Redis.
func (p *pipeline) callScript(ctx context.Context, since time.Time, keys []string, args ...any) ([]int64, error) {
	return p.callScriptChain(ctx, since, nil, keys, args...)
}

// callScriptChain is callScript, with chain (when not nil) started on the
// sender's goroutine when the first answer admits its hit (see
// queued.chain).
func (p *pipeline) callScriptChain(ctx context.Context, since time.Time, chain *hits.Chain, keys []string, args ...any) ([]int64, error) {
	// The request's own memory holds keys and args (the caller's slices
	// then need none of the heap), a call of one key and one argument
	// without more.
	q := scriptCalls.Get().(*queued)
	if chain != nil {
		q.chain, q.done = chain, chain.Done
	}
	q.deadline = since.Add(p.calls.timeout)
	q.keys, q.args = append(q.key[:0], keys...), append(q.arg[:0], args...)
	if err := p.wait(ctx, q); err != nil {
		return nil, err // not reused: a pipeline in flight may still hold it
	}
	answers, at, err := q.answers, q.at, q.answerErr
	*q = queued{}
	scriptCalls.Put(q) // answered: its pipeline is done with it
	if err != nil {
		return nil, err
	}
	if len(answers) < at+p.answer {
		return nil, errUnexpected
	}
	return answers[at : at+p.answer : at+p.answer], nil
}

// scriptCalls are the answered script calls of every pipeline, for reuse:
// a page hit's limits would otherwise allocate one of about 200 bytes.
var scriptCalls = sync.Pool{New: func() any { return new(queued) }}

// wait queues q and waits until it is answered or its context ends (that
// context's error: Redis work is only ever a shortcut, so a caller does not
// wait to learn whether its command ran).
func (p *pipeline) wait(ctx context.Context, q *queued) error {
	_, err := p.q.DoWith(ctx, q, q.done)
	if err == nil {
		return nil // without errors.As, whose target would cost every call an allocation
	}
	var u *batch.Unanswered
	if errors.As(err, &u) {
		return u.Err
	}
	return err
}

// chooser takes up to maxPipeline requests, leaving out those that have
// run out of time: Redis is slow, but a call that cannot succeed would not
// tell the breaker anything new.
func chooser() func(*queued) batch.Verdict {
	now, n := time.Now(), 0
	return func(q *queued) batch.Verdict {
		switch {
		case n == maxPipeline:
			return batch.Stop
		case !now.Before(q.deadline):
			return batch.Expire
		}
		n++
		return batch.Take
	}
}

// send sends one pipeline. It serves many requests, so it runs under its
// own deadline, that of its earliest request, rather than under the
// context of one of them.
func (p *pipeline) send(calls []*batch.Call[*queued, struct{}], _ bool) {
	reqs := make([]*queued, len(calls))
	deadline := calls[0].Req.deadline
	for i, c := range calls {
		reqs[i] = c.Req
		if c.Req.deadline.Before(deadline) {
			deadline = c.Req.deadline
		}
	}
	if p.arrivals != nil {
		// Landed once its hits are answered or handed on (hits.Start).
		defer p.arrivals.land(p.arrivals.depart(reqs))
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	err := p.calls.do(ctx, p.op, func(ctx context.Context) error {
		return p.exec(ctx, reqs)
	})
	cancel()
	if err == nil {
		err = errUnexpected
	}
	// The hits admitted as firsts are handed on together (hits.Start),
	// once the others are answered: a hit handed on may be answered, and
	// its call reused, as soon as it is started.
	var chains []*hits.Chain
	for _, c := range calls {
		q := c.Req
		switch {
		case q.cmd == nil: // not sent: the circuit is open
			c.Answer(struct{}{}, err)
		case q.chain != nil && q.answerErr == nil && len(q.answers) > q.at && q.answers[q.at] == int64(hits.None) && q.chain.Claim():
			if chains == nil {
				chains = make([]*hits.Chain, 0, len(calls))
			}
			chains = append(chains, q.chain) // the next queue answers it
		default:
			c.Answer(struct{}{}, nil)
		}
	}
	hits.Start(chains)
}

// exec sends batch as one pipeline and leaves each request's answer in its
// cmd. Script calls that find the script missing (Redis restarted, or a
// Cluster node is new) are sent once more after it is loaded, under the
// same deadline; only those, so that no script runs twice.
func (p *pipeline) exec(ctx context.Context, batch []*queued) error {
	err := p.execSome(ctx, batch)
	if err == nil || p.script == nil {
		return err
	}
	var again []*queued
	for _, q := range batch {
		if q.add == nil && redis.HasErrorPrefix(q.cmd.Err(), "NOSCRIPT") {
			again = append(again, q)
		}
	}
	if len(again) == 0 {
		return err
	}
	if err := p.script.Load(ctx, p.calls.rdb).Err(); err != nil {
		return err
	}
	return p.execSome(ctx, again)
}

func (p *pipeline) execSome(ctx context.Context, batch []*queued) error {
	pipe := p.calls.rdb.Pipeline()
	var merged []*queued
	for _, q := range batch {
		switch {
		case q.add != nil:
			q.cmd = q.add(ctx, pipe)
		case p.merge:
			merged = append(merged, q)
		default:
			q.cmd, q.at = p.script.EvalSha(ctx, pipe, q.keys, append(p.args[:len(p.args):len(p.args)], q.args...)...), 0
		}
	}
	if len(merged) > 0 {
		keys := make([]string, 0, len(merged)*p.width)
		args := make([]any, len(p.args), len(p.args)+len(merged)*p.argWidth)
		copy(args, p.args)
		for i, q := range merged {
			keys = append(keys, q.keys...)
			args = append(args, q.args...)
			q.at = i * p.answer
		}
		cmd := p.script.EvalSha(ctx, pipe, keys, args...)
		for _, q := range merged {
			q.cmd = cmd
		}
	}
	_, err := pipe.Exec(ctx)
	answer(batch)
	return err
}

// answer reads the reply of each script call in batch once, for all the
// requests that share it: the hits of a merged call would otherwise each
// convert the whole reply, a cost that grew with the square of the
// pipeline's length (a quarter of the bytes the service allocated under
// the bench's page hits).
func answer(batch []*queued) {
	var (
		last redis.Cmder
		all  []int64
		err  error
	)
	for _, q := range batch {
		if q.add != nil {
			continue
		}
		if q.cmd != last {
			last = q.cmd
			all, err = q.cmd.(*redis.Cmd).Int64Slice()
		}
		q.answers, q.answerErr = all, err
	}
}
