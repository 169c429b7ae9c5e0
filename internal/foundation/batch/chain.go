package batch

import "context"

// NewCall makes a call for Enqueue whose answer closes done: its caller
// waits on done, which may be shared with a call of another queue that
// handed it on (DoWith).
func NewCall[T, R any](ctx context.Context, req T, done chan struct{}) *Call[T, R] {
	return &Call[T, R]{Ctx: ctx, Req: req, done: done, enqueued: true}
}

// Result is the call's answer, once its done channel is closed.
func (c *Call[T, R]) Result() (R, error) { return c.res, c.err }

// Enqueue queues cs (see NewCall) without waiting for them: a sender,
// never the caller's goroutine, runs their batches. The queue answers
// every call it is given this way, also one whose context ends before a
// batch takes it (an Unanswered that was not sent), so that a wait on its
// done channel alone ends.
//
// Calls given together are queued together, under one lock, and start at
// most one batch: one sender takes them all (as far as the chooser lets
// it), where calls queued one by one could each find room and wake a
// sender of its own, which the first then left with little or nothing.
func (q *Queue[T, R]) Enqueue(cs ...*Call[T, R]) {
	if len(cs) == 0 {
		return
	}
	q.mu.Lock()
	q.pending = append(q.pending, cs...)
	if q.room() {
		q.inFlight++
		q.send()
	} else {
		q.heldBack()
	}
	q.mu.Unlock()
}

// DoWith is Do with the call's done channel given (nil: Do's own): a
// batch may leave the call unanswered when it has handed it on to a call
// of another queue that shares done and answers it. A call run inline
// never closes done.
func (q *Queue[T, R]) DoWith(ctx context.Context, req T, done chan struct{}) (R, error) {
	return q.do(&Call[T, R]{Ctx: ctx, Req: req}, done)
}
