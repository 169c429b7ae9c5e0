package coalesce_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/countersvc/countersvc/coalesce"
	"github.com/countersvc/countersvc/hits"
)

// The increments of page hits handed on together (hits.Starter.Start, as
// one limits answer's hits are) each count once, and each is answered on
// its own chain with its own serial value.
func TestChainsStartedTogetherEachCountOnce(t *testing.T) {
	s := coalesce.New(mustStore(t), coalesce.Options{})
	ctx := context.Background()
	const n = 10
	cs := make([]*hits.Chain, n)
	for i := range cs {
		cs[i] = &hits.Chain{Done: make(chan struct{}), Ctx: ctx, Name: "hits/together"}
	}
	s.Start(cs)
	var got []int64
	for i, c := range cs {
		select {
		case <-c.Done:
		case <-time.After(10 * time.Second):
			t.Fatalf("chain %d: not answered within 10 s", i)
		}
		v, err := s.Result(c)
		if err != nil {
			t.Fatalf("chain %d: %v", i, err)
		}
		got = append(got, v)
	}
	slices.Sort(got)
	for i, v := range got {
		if v != int64(i+1) {
			t.Fatalf("values %v, want 1 to %d once each", got, n)
		}
	}
}
