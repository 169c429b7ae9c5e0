package batch_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/foundation/batch"
)

// waitDone waits a bounded time for done to close.
func waitDone(t *testing.T, done chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not answered within 10 s", what)
	}
}

// A call queued without a waiting caller is answered on its channel: by
// its batch, or, when its context ends while it waits, by the queue with
// an Unanswered that was not sent.
func TestEnqueuedCallsAreAlwaysAnswered(t *testing.T) {
	g := newGate()
	q := batch.New(g.run, batch.Options[int, int]{})
	first := do(context.Background(), q, 1)
	<-g.started // the first batch holds the queue

	keptDone, goneDone := make(chan struct{}), make(chan struct{})
	kept := batch.NewCall[int, int](context.Background(), 2, keptDone)
	q.Enqueue(kept)
	ctx, cancel := context.WithCancel(context.Background())
	gone := batch.NewCall[int, int](ctx, 3, goneDone)
	q.Enqueue(gone)
	waitLen(t, q, 2)
	cancel()
	close(g.release)

	if a := <-first; a.err != nil || a.v != 2 {
		t.Fatalf("the waiting call: %d, %v; want 2", a.v, a.err)
	}
	waitDone(t, keptDone, "the enqueued call")
	if v, err := kept.Result(); err != nil || v != 4 {
		t.Errorf("the enqueued call: %d, %v; want 4", v, err)
	}
	waitDone(t, goneDone, "the enqueued call whose context ended")
	var u *batch.Unanswered
	if _, err := gone.Result(); !errors.As(err, &u) || u.Sent || !errors.Is(err, context.Canceled) {
		t.Errorf("the enqueued call whose context ended: %v, want an Unanswered, not sent, of context.Canceled", err)
	}
	for _, b := range g.seen() {
		for _, r := range b {
			if r == 3 {
				t.Errorf("batches %v: the call whose context ended was sent", g.seen())
			}
		}
	}
}

// A batch may hand a call on to another queue whose answer closes the
// same channel: DoWith's caller then returns when that one is answered.
func TestDoWithReturnsWhenTheCallHandedOnIsAnswered(t *testing.T) {
	done := make(chan struct{})
	next := batch.New(func(b []*batch.Call[int, int], _ bool) {
		for _, c := range b {
			c.Answer(c.Req*10, nil)
		}
	}, batch.Options[int, int]{})
	var handed *batch.Call[int, int]
	q := batch.New(func(b []*batch.Call[int, int], _ bool) {
		for _, c := range b {
			handed = batch.NewCall[int, int](context.Background(), c.Req, done)
			next.Enqueue(handed) // and c is not answered here
		}
	}, batch.Options[int, int]{})

	returned := make(chan error, 1)
	go func() {
		_, err := q.DoWith(context.Background(), 7, done)
		returned <- err
	}()
	select {
	case err := <-returned:
		if err != nil {
			t.Fatalf("DoWith: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("DoWith did not return within 10 s of the handed-on call's answer")
	}
	if v, err := handed.Result(); err != nil || v != 70 {
		t.Errorf("the handed-on call: %d, %v; want 70", v, err)
	}
}

// Calls enqueued together start one sender, which runs their batches in
// turn, however much room the queue has: calls enqueued one by one would
// each wake a sender of its own (here, batches of one each, all three at
// once).
func TestCallsEnqueuedTogetherStartOneSender(t *testing.T) {
	g := newGate()
	one := func() func(int) batch.Verdict {
		n := 0
		return func(int) batch.Verdict {
			if n++; n > 1 {
				return batch.Stop
			}
			return batch.Take
		}
	}
	q := batch.New(g.run, batch.Options[int, int]{MaxInFlight: 4, Choose: one})
	var calls []*batch.Call[int, int]
	var dones []chan struct{}
	for i := 1; i <= 3; i++ {
		done := make(chan struct{})
		calls, dones = append(calls, batch.NewCall[int, int](context.Background(), i, done)), append(dones, done)
	}
	q.Enqueue(calls...)
	<-g.started
	select {
	case <-g.started:
		t.Fatalf("batches %v: a second ran beside the first", g.seen())
	case <-time.After(50 * time.Millisecond):
	}
	close(g.release)
	for i, done := range dones {
		waitDone(t, done, fmt.Sprintf("call %d", i+1))
		if v, err := calls[i].Result(); err != nil || v != 2*(i+1) {
			t.Errorf("call %d: %d, %v; want %d", i+1, v, err, 2*(i+1))
		}
	}
	if got := g.seen(); !slices.EqualFunc(got, [][]int{{1}, {2}, {3}}, slices.Equal) {
		t.Errorf("batches %v, want [[1] [2] [3]]", got)
	}
}
