package cache

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Pipeline bounds. One pipeline in flight at a time: reads that arrive
// while it travels wait at most one round trip and then leave together.
// More senders would split the queue into pipelines of about one read
// each, which costs as much as sending every read alone.
const (
	maxSenders  = 1
	maxPipeline = 256
)

// readPipeline sends the entry reads (HMGET) of concurrent requests to Redis
// together, as one pipeline: on a busy server a cached read then costs a
// fraction of a system call on either side instead of a write and a read of
// its own, which is most of what a hit costs. It never waits for company: a
// pipeline leaves as soon as a sender is free, so a lone request pays one round
// trip and requests that arrive while pipelines are in flight form the next.
//
// go-redis's AutoPipeline does the like, but is marked experimental and its
// callers cannot give up waiting; this is the small part we need, with each
// request free to leave when its own context ends.
//
// Pipelining changes nothing for coherence: a read joins a pipeline that has not
// been sent yet, so Redis runs it after the request arrived.
type readPipeline struct {
	s *Store

	mu      sync.Mutex
	queue   []*pendingRead
	senders int
}

type pendingRead struct {
	key  string
	vals []any
	err  error
	done chan struct{}
}

// hmget reads the v and g fields of key.
func (b *readPipeline) hmget(ctx context.Context, key string) ([]any, error) {
	r := &pendingRead{key: key, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, r)
	start := b.senders < maxSenders
	if start {
		b.senders++
	}
	b.mu.Unlock()
	if start {
		go b.send()
	}
	select {
	case <-r.done:
		return r.vals, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// send sends pipelines until the queue is empty. A pipeline serves many
// requests, so it runs under the cache's own deadline rather than under the
// context of one of them.
func (b *readPipeline) send() {
	for {
		b.mu.Lock()
		n := min(len(b.queue), maxPipeline)
		if n == 0 {
			b.senders--
			b.mu.Unlock()
			return
		}
		pipeline := make([]*pendingRead, n)
		copy(pipeline, b.queue)
		b.queue = append(b.queue[:0], b.queue[n:]...)
		b.mu.Unlock()

		cmds := make([]*redis.SliceCmd, n)
		err := b.s.do(context.Background(), "read", func(ctx context.Context) error {
			pipe := b.s.rdb.Pipeline()
			for i, r := range pipeline {
				cmds[i] = pipe.HMGet(ctx, r.key, "v", "g")
			}
			_, err := pipe.Exec(ctx)
			return err
		})
		for i, r := range pipeline {
			if cmds[i] != nil {
				r.vals, r.err = cmds[i].Result()
			}
			if r.err == nil && len(r.vals) != 2 {
				r.err = err // not sent (circuit open), or an answer that makes no sense
				if r.err == nil {
					r.err = errUnexpected
				}
			}
			close(r.done)
		}
	}
}
