package cache_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/internal/testenv"
)

// chainOf is a hits.Chain whose increment, when the limits start it, is
// counted in started and answered at once.
func chainOf(started *atomic.Int32) *hits.Chain {
	var c *hits.Chain
	c = hits.NewChain(func() {
		started.Add(1)
		close(c.Done)
	})
	return c
}

// The limits start the increment of a hit they admit as a first, on the
// goroutine that read their answer, and answer it when that increment
// is; a repeat and a hit over the budget (three a minute, the repeat
// one of them) are answered as ever, with nothing started.
func TestAdmitStartsTheIncrementOfAFirstHitOnly(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	l := hitLimits(t, r.DeadlineClient(t), cache.HitLimits{Rate: 3, RateWindow: time.Minute, DedupWindow: 30 * time.Second}, 2*time.Second)
	ctx := context.Background()
	steps := []struct {
		name        string
		visitor     string
		wantEarlier hits.Earlier
		wantWait    bool
		wantStarted bool
	}{
		{"a first hit is started", "v1", hits.None, false, true},
		{"its repeat is answered", "v1", hits.Pending, false, false},
		{"another visitor's first hit is started", "v2", hits.None, false, true},
		{"a hit over the budget is answered", "v3", hits.None, true, false},
	}
	for _, s := range steps {
		var started atomic.Int32
		c := chainOf(&started)
		wait, earlier, err := l.Admit(ctx, hits.Hit{Client: "client", Visitor: s.visitor, Name: "hits/a", Chain: c})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if earlier != s.wantEarlier || (wait > 0) != s.wantWait || (started.Load() == 1) != s.wantStarted {
			t.Errorf("%s: earlier %v, wait %v, started %d; want %v, a wait %v, started %v",
				s.name, earlier, wait, started.Load(), s.wantEarlier, s.wantWait, s.wantStarted)
		}
	}

	// Many at once, in shared pipelines: each first hit started once,
	// each Admit answered.
	const n = 64
	var started atomic.Int32
	together(n, func(i int) {
		c := chainOf(&started)
		id := "many" + strconv.Itoa(i)
		if _, earlier, err := l.Admit(ctx, hits.Hit{Client: id, Visitor: id, Name: "hits/a", Chain: c}); err != nil || earlier != hits.None {
			t.Errorf("hit %d: %v, %v", i, earlier, err)
		}
		select {
		case <-c.Done:
		case <-time.After(10 * time.Second):
			t.Errorf("hit %d: its chain's Done not closed within 10 s", i)
		}
	})
	if got := started.Load(); got != n {
		t.Errorf("%d increments started, want %d", got, n)
	}
}
