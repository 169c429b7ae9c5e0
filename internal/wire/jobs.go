package wire

import (
	"context"
	"sync"
)

// jobs is the one runner of the service's background work (purges, the
// live hub, the webhook relay, reloads, flushes): the core and the
// capabilities add their jobs while Build runs, Build starts them all
// together at its end, and Close ends them (one context) and waits for
// every one before it closes Redis and MySQL, so that nothing runs that
// the service's owner cannot stop and wait for.
type jobs struct {
	pending []job
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// job is one loop that runs until its context ends.
type job struct {
	name string // for a reader of Build: what runs in the background
	run  func(ctx context.Context)
}

// add registers a job; it starts with the others.
func (j *jobs) add(name string, run func(ctx context.Context)) {
	j.pending = append(j.pending, job{name, run})
}

// start starts every registered job, each in its own goroutine.
func (j *jobs) start() {
	ctx, cancel := context.WithCancel(context.Background())
	j.cancel = cancel
	for _, jb := range j.pending {
		j.wg.Go(func() { jb.run(ctx) })
	}
	j.pending = nil
}

// stop ends the jobs and waits for all of them. It may be called before
// start (a Build that failed) and more than once.
func (j *jobs) stop() {
	if j.cancel != nil {
		j.cancel()
	}
	j.wg.Wait()
	j.pending = nil
}
