package cache

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Pipeline bounds. One pipeline in flight at a time: commands that arrive
// while it travels wait at most one round trip and then leave together.
// More senders would split the queue into pipelines of about one command
// each, which costs as much as sending every command alone.
const (
	maxSenders  = 1
	maxPipeline = 256
)

// pipeline sends the Redis commands of concurrent requests together, as one
// pipeline: on a busy server a command then costs a fraction of a system
// call on either side instead of a write and a read of its own, which is
// most of what a cached read or a page hit's limits cost. It never waits for
// company: a pipeline leaves as soon as a sender is free, so a lone request
// pays one round trip and requests that arrive while a pipeline is in flight
// form the next. The entry reads (HMGET) and the page-hit limits each have
// one.
//
// go-redis's AutoPipeline does the like, but is marked experimental and its
// callers cannot give up waiting; this is the small part we need, with each
// request free to leave when its own context ends.
//
// Pipelining changes nothing for coherence: a command joins a pipeline that
// has not been sent yet, so Redis runs it after the request arrived.
type pipeline struct {
	calls   *redisCalls
	op      string          // what its failures are counted as
	scripts []*redis.Script // loaded again when Redis has lost them (NOSCRIPT)

	mu      sync.Mutex
	queue   []*queued
	senders int
}

type queued struct {
	ctx  context.Context
	add  func(context.Context, redis.Pipeliner) redis.Cmder
	cmd  redis.Cmder
	err  error
	done chan struct{}
}

// call queues the command that add puts into a pipeline and waits for its
// answer, or until ctx ends. The command's own error is in the Cmder; err
// is for a command that was not answered (Redis failed, or the circuit is
// open).
func (p *pipeline) call(ctx context.Context, add func(context.Context, redis.Pipeliner) redis.Cmder) (redis.Cmder, error) {
	q := &queued{ctx: ctx, add: add, done: make(chan struct{})}
	p.mu.Lock()
	p.queue = append(p.queue, q)
	start := p.senders < maxSenders
	if start {
		p.senders++
	}
	p.mu.Unlock()
	if start {
		go p.send()
	}
	select {
	case <-q.done:
		return q.cmd, q.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// send sends pipelines until the queue is empty. A pipeline serves many
// requests, so it runs under the cache's own deadline rather than under the
// context of one of them.
func (p *pipeline) send() {
	for {
		batch := p.next()
		if batch == nil {
			return
		}
		cmds := make([]redis.Cmder, len(batch))
		err := p.calls.do(context.Background(), p.op, func(ctx context.Context) error {
			return p.exec(ctx, batch, cmds)
		})
		for i, q := range batch {
			// An answered command carries its own error, if any.
			q.cmd = cmds[i]
			if q.cmd == nil {
				q.err = err // not sent: the circuit is open
				if q.err == nil {
					q.err = errUnexpected
				}
			}
			close(q.done)
		}
	}
}

// next takes the next pipeline's worth from the queue, leaving out the
// requests that have stopped waiting, or returns nil and retires the sender
// when there is nothing to send.
func (p *pipeline) next() []*queued {
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		n := min(len(p.queue), maxPipeline)
		if n == 0 {
			p.senders--
			return nil
		}
		batch := make([]*queued, 0, n)
		for _, q := range p.queue[:n] {
			if q.ctx.Err() == nil {
				batch = append(batch, q)
			}
		}
		p.queue = append(p.queue[:0], p.queue[n:]...)
		if len(batch) > 0 {
			return batch
		}
	}
}

// exec sends batch's commands as one pipeline, their answers into cmds.
// Commands that find their script missing (Redis restarted, or a Cluster
// node is new) are sent once more after the scripts are loaded, under the
// same deadline; only those, so that no script runs twice.
func (p *pipeline) exec(ctx context.Context, batch []*queued, cmds []redis.Cmder) error {
	all := make([]int, len(batch))
	for i := range all {
		all[i] = i
	}
	err := p.execSome(ctx, batch, cmds, all)
	if err == nil || len(p.scripts) == 0 {
		return err
	}
	var again []int
	for i, c := range cmds {
		if redis.HasErrorPrefix(c.Err(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return err
	}
	for _, s := range p.scripts {
		if err := s.Load(ctx, p.calls.rdb).Err(); err != nil {
			return err
		}
	}
	return p.execSome(ctx, batch, cmds, again)
}

func (p *pipeline) execSome(ctx context.Context, batch []*queued, cmds []redis.Cmder, which []int) error {
	pipe := p.calls.rdb.Pipeline()
	for _, i := range which {
		cmds[i] = batch[i].add(ctx, pipe)
	}
	_, err := pipe.Exec(ctx)
	return err
}
