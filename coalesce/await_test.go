package coalesce_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/coalesce"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
)

// sumStore answers each one-counter statement with the running sum, after
// the test lets it through (gate), and tells the test what it carried.
type sumStore struct {
	counters.Store
	gate   chan struct{}
	rounds chan int64
	mu     sync.Mutex
	value  int64
}

func (s *sumStore) Increment(_ context.Context, _ string, by int64) (int64, error) {
	s.rounds <- by
	<-s.gate
	s.mu.Lock()
	defer s.mu.Unlock()
	s.value += by
	return s.value, nil
}

// IncrementMany is a round that says when its steps happened (one that
// straddles a quarter hour): Increment all the same.
func (s *sumStore) IncrementMany(ctx context.Context, incs []counters.Increment) ([]int64, error) {
	v, err := s.Increment(ctx, incs[0].Name, incs[0].By)
	return []int64{v}, err
}

// arriving is the hits.Arrivals of one test: hits on name are on their
// way, due at once; each call of Arriving runs arrive (once).
type arriving struct {
	name   string
	n      int
	landed chan struct{}
	once   sync.Once
	arrive func()
}

func (a *arriving) Arriving(name string) (<-chan struct{}, int, time.Duration) {
	if name != a.name {
		return nil, 0, 0
	}
	a.once.Do(func() { go a.arrive() })
	return a.landed, a.n, 0
}

func hitChain(name string) *hits.Chain {
	return &hits.Chain{Done: make(chan struct{}), Ctx: context.Background(), Name: name}
}

func waitChain(t *testing.T, s *coalesce.Store, c *hits.Chain, what string) int64 {
	t.Helper()
	select {
	case <-c.Done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: not answered within 10 s", what)
	}
	v, err := s.Result(c)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func nextRound(t *testing.T, st *sumStore, what string) int64 {
	t.Helper()
	select {
	case by := <-st.rounds:
		return by
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no statement within 10 s", what)
	}
	return 0
}

// A round of one counter, once answered, holds the counter's next round
// for the page hits whose limits' answer is on its way to it, so that a
// hit arriving just after the round joins the next one instead of waiting
// out the one after it. Without the hold the next round would carry only
// the increment that queued while the first ran.
func TestARoundWaitsForTheHitsOnTheirWayToItsCounter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		await bool
		want  int64 // what the round after the first carries
	}{
		{"awaited", true, 2},
		{"not awaited", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &sumStore{gate: make(chan struct{}), rounds: make(chan int64, 8)}
			s := coalesce.New(st, coalesce.Options{})
			late, landed := hitChain("hits/hot"), make(chan struct{})
			a := &arriving{name: "hits/hot", n: 8, landed: landed, arrive: func() {
				time.Sleep(10 * time.Millisecond)
				s.Start([]*hits.Chain{late})
				close(landed)
			}}
			if tc.await {
				s.Await(a)
			}
			first := []*hits.Chain{hitChain("hits/hot"), hitChain("hits/hot")}
			s.Start(first)
			if by := nextRound(t, st, "the first round"); by != 2 {
				t.Fatalf("the first round carried %d increments, want 2", by)
			}
			queued := hitChain("hits/hot")
			s.Start([]*hits.Chain{queued})
			// A round of a second: a hold of up to a quarter of it.
			time.Sleep(time.Second)
			close(st.gate)
			for i, c := range first {
				waitChain(t, s, c, "the first round's increment "+string(rune('a'+i)))
			}
			if by := nextRound(t, st, "the second round"); by != tc.want {
				t.Errorf("the second round carried %d increments, want %d", by, tc.want)
			}
			if !tc.await {
				s.Start([]*hits.Chain{late}) // arrive never ran
			}
			waitChain(t, s, queued, "the queued increment")
			waitChain(t, s, late, "the late increment")
		})
	}
}

// A hold ends when the round's share of time has passed, whether or not
// the hits on their way have arrived: a limits answer that never comes
// (Redis hung) costs the counter's next round that much at most.
func TestARoundHoldsItsCounterOnlyAWhile(t *testing.T) {
	st := &sumStore{gate: make(chan struct{}), rounds: make(chan int64, 8)}
	s := coalesce.New(st, coalesce.Options{})
	s.Await(&arriving{name: "hits/hot", n: 64, landed: make(chan struct{}), arrive: func() {}})
	first := []*hits.Chain{hitChain("hits/hot"), hitChain("hits/hot")}
	s.Start(first)
	nextRound(t, st, "the first round")
	queued := hitChain("hits/hot")
	s.Start([]*hits.Chain{queued})
	time.Sleep(200 * time.Millisecond)
	close(st.gate)
	waitChain(t, s, first[0], "the first round's increment")
	began := time.Now()
	nextRound(t, st, "the second round")
	// At most a quarter of the first round's 200 ms; 2 s for a busy machine.
	if waited := time.Since(began); waited > 2*time.Second {
		t.Errorf("the second round began %v after the first was answered, want at most about 50 ms", waited)
	}
	waitChain(t, s, queued, "the queued increment")
}
