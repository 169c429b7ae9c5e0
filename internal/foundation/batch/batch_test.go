package batch_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/foundation/batch"
)

// gate is a run that records each batch's requests and holds the first
// batch until released, so that a test can queue calls behind it.
type gate struct {
	mu      sync.Mutex
	batches [][]int
	alone   []bool
	started chan struct{} // one send per batch
	release chan struct{} // closed to let the first batch end
	first   sync.Once
}

func newGate() *gate {
	return &gate{started: make(chan struct{}, 100), release: make(chan struct{})}
}

func (g *gate) run(b []*batch.Call[int, int], alone bool) {
	var reqs []int
	for _, c := range b {
		reqs = append(reqs, c.Req)
	}
	g.mu.Lock()
	g.batches = append(g.batches, reqs)
	g.alone = append(g.alone, alone)
	g.mu.Unlock()
	g.started <- struct{}{}
	g.first.Do(func() { <-g.release })
	for _, c := range b {
		c.Answer(2*c.Req, nil)
	}
}

func (g *gate) seen() [][]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.batches)
}

// waitLen waits until n calls are queued.
func waitLen[T, R any](t *testing.T, q *batch.Queue[T, R], n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); q.Len() < n; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", q.Len(), n)
		}
	}
}

type answer struct {
	v   int
	err error
}

// do runs q.Do in the background and returns where its answer comes.
func do(ctx context.Context, q *batch.Queue[int, int], req int) chan answer {
	ch := make(chan answer, 1)
	go func() {
		v, err := q.Do(ctx, req)
		ch <- answer{v, err}
	}()
	return ch
}

func TestCallsThatArriveWhileABatchRunsGoTogetherInTheNext(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) {
			g := newGate()
			q := batch.New(g.run, batch.Options[int, int]{Inline: inline})
			first := do(context.Background(), q, 1)
			<-g.started
			var rest []chan answer
			for i := 2; i <= 5; i++ {
				rest = append(rest, do(context.Background(), q, i))
				waitLen(t, q, i-1)
			}
			close(g.release)
			if a := <-first; a.v != 2 || a.err != nil {
				t.Fatalf("first call: %+v, want 2", a)
			}
			for i, ch := range rest {
				if a, want := <-ch, 2*(i+2); a.v != want || a.err != nil {
					t.Fatalf("call %d: %+v, want %d", i+2, a, want)
				}
			}
			if got, want := fmt.Sprint(g.seen()), "[[1] [2 3 4 5]]"; got != want {
				t.Fatalf("batches %s, want %s", got, want)
			}
			if got, want := fmt.Sprint(g.alone), fmt.Sprintf("[%v false]", inline); got != want {
				t.Fatalf("alone %s, want %s", got, want)
			}
		})
	}
}

func TestACallLeftBeforeItsBatchIsNeverRun(t *testing.T) {
	g := newGate()
	q := batch.New(g.run, batch.Options[int, int]{WaitSent: true})
	first := do(context.Background(), q, 1)
	<-g.started
	ctx, cancel := context.WithCancel(context.Background())
	left := do(ctx, q, 2)
	waitLen(t, q, 1)
	cancel()
	a := <-left
	var u *batch.Unanswered
	if !errors.As(a.err, &u) || u.Sent || !errors.Is(a.err, context.Canceled) {
		t.Fatalf("left call: %+v, want an Unanswered, not sent, of context.Canceled", a)
	}
	stays := do(context.Background(), q, 3)
	waitLen(t, q, 2)
	close(g.release)
	<-first
	if a := <-stays; a.v != 6 {
		t.Fatalf("call after: %+v, want 6", a)
	}
	if got, want := fmt.Sprint(g.seen()), "[[1] [3]]"; got != want {
		t.Fatalf("batches %s, want %s", got, want)
	}
}

func TestACallLeftAfterItsBatchTookIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		waitSent bool
		want     string
	}{
		{"says it was sent", false, "sent"},
		{"waits for the answer with WaitSent", true, "answered"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newGate()
			q := batch.New(g.run, batch.Options[int, int]{WaitSent: tc.waitSent})
			ctx, cancel := context.WithCancel(context.Background())
			ch := do(ctx, q, 1)
			<-g.started
			cancel()
			if !tc.waitSent {
				// It leaves while the batch is still held.
				a := <-ch
				var u *batch.Unanswered
				if !errors.As(a.err, &u) || !u.Sent {
					t.Fatalf("answer %+v, want an Unanswered that was sent", a)
				}
				close(g.release)
				return
			}
			select {
			case a := <-ch:
				t.Fatalf("answer %+v before the batch ended", a)
			case <-time.After(20 * time.Millisecond):
			}
			close(g.release)
			if a := <-ch; a.v != 2 || a.err != nil {
				t.Fatalf("answer %+v, want the batch's 2", a)
			}
		})
	}
}

func TestTheChooserShapesEachBatch(t *testing.T) {
	g := newGate()
	// Evens go first, at most two a batch; odds wait for a later batch;
	// 99 is out of time.
	q := batch.New(g.run, batch.Options[int, int]{Choose: func() func(int) batch.Verdict {
		evens, odds := 0, 0
		return func(req int) batch.Verdict {
			switch {
			case req == 99:
				return batch.Expire
			case req%2 == 1 && evens > 0:
				return batch.Later
			case evens == 2 || odds == 2:
				return batch.Stop
			case req%2 == 0:
				evens++
			default:
				odds++
			}
			return batch.Take
		}
	}})
	first := do(context.Background(), q, 0)
	<-g.started
	var chs []chan answer
	for i, req := range []int{2, 3, 99, 4, 5, 6, 7} {
		chs = append(chs, do(context.Background(), q, req))
		waitLen(t, q, i+1)
	}
	close(g.release)
	<-first
	for i, ch := range chs {
		a := <-ch
		if i == 2 {
			var u *batch.Unanswered
			if !errors.As(a.err, &u) || u.Sent || !errors.Is(a.err, context.DeadlineExceeded) {
				t.Fatalf("expired call: %+v, want an unsent Unanswered of DeadlineExceeded", a)
			}
		} else if a.err != nil {
			t.Fatalf("call %d: %v", i, a.err)
		}
	}
	if got, want := fmt.Sprint(g.seen()), "[[0] [2 4] [3 5] [6] [7]]"; got != want {
		t.Fatalf("batches %s, want %s", got, want)
	}
}

// Also with senders that linger between spells: a call may wake one as
// it gives up, and the places in flight stay bounded all the same; and
// with an adaptive limit, whose callers run the batches they start.
func TestMaxInFlightBoundsTheBatchesThatRunAtOnce(t *testing.T) {
	for _, tc := range []struct {
		linger   time.Duration
		adaptive bool
	}{{0, false}, {time.Millisecond, false}, {0, true}, {time.Millisecond, true}} {
		linger := tc.linger
		t.Run(fmt.Sprint("linger ", linger, " adaptive ", tc.adaptive), func(t *testing.T) {
			var running, most atomic.Int32
			var taken, done atomic.Int32
			const max = 3
			q := batch.New(func(b []*batch.Call[int, int], _ bool) {
				n := running.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Millisecond)
				running.Add(-1)
				for _, c := range b {
					c.Answer(c.Req, nil)
				}
			}, batch.Options[int, int]{MaxInFlight: max, Inline: true, Linger: linger, Adaptive: tc.adaptive,
				Taken: func(b []*batch.Call[int, int]) { taken.Add(int32(len(b))) },
				Done:  func(b []*batch.Call[int, int]) { done.Add(int32(len(b))) }})
			var wg sync.WaitGroup
			const calls = 2000
			for i := range calls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if i%3 == 0 {
						time.Sleep(time.Duration(i%7) * time.Millisecond) // spells apart, around the linger
					}
					if v, err := q.Do(context.Background(), i); v != i || err != nil {
						t.Errorf("call %d: %d, %v", i, v, err)
					}
				}()
			}
			wg.Wait()
			if m := most.Load(); m > max {
				t.Fatalf("%d batches ran at once, want at most %d", m, max)
			}
			// Done is told once a batch has run, which is after it
			// answered its calls: the last one may still be on its way.
			for end := time.Now().Add(10 * time.Second); done.Load() < calls && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
			if taken.Load() != calls || done.Load() != calls {
				t.Fatalf("Taken saw %d calls and Done %d, want %d each", taken.Load(), done.Load(), calls)
			}
		})
	}
}

// goroutineID is the id of the calling goroutine, from its stack trace.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, _, _ := strings.Cut(strings.TrimPrefix(string(buf), "goroutine "), " ")
	return id
}

// A sender that lingers serves the next busy spell itself, however many
// come, while one that does not ends with its spell: each spell then gets
// a new goroutine.
func TestALingeringSenderServesTheNextSpells(t *testing.T) {
	tests := []struct {
		linger      time.Duration
		wantSenders int
	}{
		{0, 20},
		{time.Minute, 1},
	}
	for _, tc := range tests {
		senders := map[string]bool{}
		var last string
		q := batch.New(func(b []*batch.Call[int, int], _ bool) {
			last = goroutineID()
			senders[last] = true // one batch at a time: no lock needed
			for _, c := range b {
				c.Answer(c.Req, nil)
			}
		}, batch.Options[int, int]{Linger: tc.linger})
		for i := range 20 {
			if v, err := q.Do(context.Background(), i); v != i || err != nil {
				t.Fatalf("linger %v, call %d: %d, %v", tc.linger, i, v, err)
			}
			if tc.linger == 0 {
				// The sender has found the queue empty and ended. Its own
				// end, not the count of goroutines: another test's
				// goroutine ending meanwhile would pass for it.
				waitEnded(t, last)
			}
		}
		if got := len(senders); got != tc.wantSenders {
			t.Errorf("linger %v: %d senders ran 20 spells, want %d", tc.linger, got, tc.wantSenders)
		}
	}
}

// A lingering sender that no call wakes ends after Linger: an idle queue
// keeps no goroutine, and the next call starts a sender again. Each
// sender is watched by its own goroutine id, not by the count of the
// process's goroutines, which any other test's goroutine changes.
func TestALingeringSenderEndsWhenNoCallComes(t *testing.T) {
	var sender string
	q := batch.New(func(b []*batch.Call[int, int], _ bool) {
		sender = goroutineID() // one batch at a time: no lock needed
		for _, c := range b {
			c.Answer(c.Req, nil)
		}
	}, batch.Options[int, int]{Linger: 10 * time.Millisecond})
	var previous string
	for i := range 2 {
		if v, err := q.Do(context.Background(), i); v != i || err != nil {
			t.Fatalf("call %d: %d, %v", i, v, err)
		}
		if sender == previous {
			t.Fatalf("call %d was sent by goroutine %s, which had ended: no new sender started", i, sender)
		}
		waitEnded(t, sender)
		previous = sender
	}
}

// waitEnded waits until the goroutine of id has ended.
func waitEnded(t *testing.T, id string) {
	t.Helper()
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		all := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(all, "goroutine "+id+" [") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutine %s did not end: a sender lingered", id)
		}
	}
}
