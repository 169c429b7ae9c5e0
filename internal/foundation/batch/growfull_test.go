package batch_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/countersvc/countersvc/internal/foundation/batch"
)

// With GrowFull, calls that queue beside a batch in flight start another
// only once as many wait as it carries; before that they wait for it to
// end, or join each other. Without, the first of them starts a batch of
// its own at once.
func TestGrowFullStartsABatchOnlyAsLargeAsThoseInFlight(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprint("GrowFull=", full), func(t *testing.T) {
			var mu sync.Mutex
			var batches [][]int
			// The batches led by 1, 2 and 3 run until released.
			release := map[int]chan struct{}{1: make(chan struct{}), 2: make(chan struct{}), 3: make(chan struct{})}
			started := make(chan int, 100)
			done := make(chan int, 100)
			q := batch.New(func(b []*batch.Call[int, int], _ bool) {
				mu.Lock()
				var reqs []int
				for _, c := range b {
					reqs = append(reqs, c.Req)
				}
				batches = append(batches, reqs)
				mu.Unlock()
				started <- b[0].Req
				if ch := release[b[0].Req]; ch != nil {
					<-ch
				}
				for _, c := range b {
					c.Answer(c.Req, nil)
				}
			}, batch.Options[int, int]{MaxInFlight: 2, GrowFull: full,
				// Under the queue's lock: a call that comes after it has
				// been told finds the batch's place given up.
				Done: func(b []*batch.Call[int, int]) { done <- b[0].Req }})
			ctx := context.Background()
			// 1 and 2 fill both places; 3 to 6 wait and go together once
			// 1 ends; then 2 ends, leaving one batch of four in flight.
			one, two := do(ctx, q, 1), (chan answer)(nil)
			if got := <-started; got != 1 {
				t.Fatalf("batch of %d started, want 1", got)
			}
			two = do(ctx, q, 2)
			if got := <-started; got != 2 {
				t.Fatalf("batch of %d started, want 2", got)
			}
			var rest []chan answer
			for i := 3; i <= 6; i++ {
				rest = append(rest, do(ctx, q, i))
				waitLen(t, q, i-2)
			}
			close(release[1])
			<-one
			if got := <-started; got != 3 {
				t.Fatalf("batch of %d started, want 3", got)
			}
			close(release[2])
			<-two
			for got := <-done; got != 2; got = <-done {
			}
			for i := 7; i <= 10; i++ {
				ch := do(ctx, q, i)
				switch {
				case !full && i == 7:
					// It runs beside the batch in flight.
					if a := <-ch; a.v != 7 || a.err != nil {
						t.Fatalf("call 7: %+v", a)
					}
					continue
				case full && i < 10:
					waitLen(t, q, i-6)
				}
				rest = append(rest, ch)
			}
			if full {
				// 10 makes four waiting, as many as the batch in flight
				// carries: their batch starts before the one in flight
				// ends (else 3's end would free the place for 7 to 9
				// alone, 10 not yet queued).
				if got := <-started; got != 7 {
					t.Fatalf("batch of %d started, want 7", got)
				}
			}
			close(release[3])
			for _, ch := range rest {
				if a := <-ch; a.err != nil {
					t.Fatalf("call: %v", a.err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			want := "[7]"
			if full {
				want = "[7 8 9 10]"
			}
			if got := fmt.Sprint(batches[3]); got != want {
				t.Fatalf("batches %v: the fourth is %s, want %s", batches, got, want)
			}
		})
	}
}
