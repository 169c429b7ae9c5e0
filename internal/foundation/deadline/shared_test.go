package deadline

import (
	"context"
	"errors"
	"testing"
	"time"
)

type valueKey struct{}

// A call's context ends d after its start, at most a step later, never
// earlier, with the deadline's error; it keeps the values of the context
// it was given, and a context derived from it ends with it.
func TestASharedDeadlineEndsEachCallWithinAStepAfterItsOwn(t *testing.T) {
	const d = 200 * time.Millisecond
	s := NewShared(d)
	parent := context.WithValue(context.Background(), valueKey{}, "principal")
	start := time.Now()
	ctx, cancel := s.Context(parent)
	defer cancel()
	child, stop := context.WithCancel(ctx)
	defer stop()

	dl, ok := ctx.Deadline()
	if !ok {
		t.Fatal("the context has no deadline")
	}
	if early, late := start.Add(d), time.Now().Add(d+s.step); dl.Before(early) || dl.After(late) {
		t.Fatalf("deadline %v after the start, want between %v and %v", dl.Sub(start), d, d+s.step)
	}
	if got := ctx.Value(valueKey{}); got != "principal" {
		t.Fatalf("the context's value is %v, want the parent's", got)
	}
	for name, c := range map[string]context.Context{"context": ctx, "derived context": child} {
		select {
		case <-c.Done():
		case <-time.After(d + s.step + 2*time.Second):
			t.Fatalf("the %s has not ended %v after its deadline", name, time.Since(dl))
		}
		if took := time.Since(start); took < d {
			t.Fatalf("the %s ended after %v, before its %v", name, took, d)
		}
		if !errors.Is(c.Err(), context.DeadlineExceeded) {
			t.Fatalf("the %s ended with %v, want the deadline's error", name, c.Err())
		}
	}
}

// The calls that start within one step share one end, and so one timer;
// a call a step later gets the next.
func TestCallsWithinAStepShareOneEnd(t *testing.T) {
	s := NewShared(time.Hour) // a step of MaxStep
	var first context.Context
	for {
		// Two calls in the same step: retried if the step turned between them.
		a, _ := s.Context(context.Background())
		b, _ := s.Context(context.Background())
		da, _ := a.Deadline()
		db, _ := b.Deadline()
		if da.Equal(db) {
			if a.Done() != b.Done() {
				t.Fatal("two calls of one step have one deadline but two ends")
			}
			first = a
			break
		}
	}
	time.Sleep(2 * s.step)
	later, _ := s.Context(context.Background())
	d1, _ := first.Deadline()
	d2, _ := later.Deadline()
	if !d2.After(d1) || later.Done() == first.Done() {
		t.Fatalf("a call two steps later ends at %v, the first at %v, on the same channel: %v", d2, d1, later.Done() == first.Done())
	}
}

// A context that can end by itself ends the call's context when it ends;
// one that cannot gets the shared end.
func TestASharedDeadlineKeepsItsParentsEnd(t *testing.T) {
	s := NewShared(time.Hour)
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, cancel := s.Context(parent)
	defer cancel()
	cancelParent()
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the parent ended, the call's context did not")
	}
	ctx2, cancel2 := s.Context(context.WithoutCancel(parent))
	if ctx2.Err() != nil {
		t.Fatalf("a parent that cannot end gave an ended context: %v", ctx2.Err())
	}
	cancel2() // does nothing, and may be called
}
