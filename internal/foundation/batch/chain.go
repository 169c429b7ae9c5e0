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

// Enqueue queues c (see NewCall) without waiting for it: a sender, never
// the caller's goroutine, runs its batch. The queue answers every call it
// is given this way, also one whose context ends before a batch takes it
// (an Unanswered that was not sent), so that a wait on its done channel
// alone ends.
func (q *Queue[T, R]) Enqueue(c *Call[T, R]) {
	q.mu.Lock()
	q.pending = append(q.pending, c)
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
