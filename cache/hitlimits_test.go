package cache_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/internal/testenv"
)

// processes are n instances of the limits on r, each with its own cache
// and connections, as n processes of the service keep them.
func processes(t *testing.T, r *testenv.Redis, n int, o cache.HitLimits) []hits.Limits {
	t.Helper()
	ls := make([]hits.Limits, n)
	for i := range ls {
		ls[i] = hitLimits(t, r.DeadlineClient(t), o, 2*time.Second)
	}
	return ls
}

// together runs f(i) for i in [0, n) on n goroutines released at once.
func together(n int, f func(i int)) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	ready.Add(n)
	done.Add(n)
	for i := range n {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			f(i)
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// Hits from many goroutines of several processes, batched into pipelines,
// still get exactly the budget of each client between them.
func TestAdmitAllowsExactlyTheBudgetAcrossProcesses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		processes int
		budget    int
		hits      int // per client, spread over the processes
	}{
		{"one process", 1, 10, 40},
		{"four processes", 4, 10, 40},
		{"four processes, budget of one", 4, 1, 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := testenv.StartRedis(t)
			// An hour's window: no budget comes back while the test runs.
			ls := processes(t, r, tc.processes, cache.HitLimits{Rate: tc.budget, RateWindow: time.Hour, DedupWindow: time.Minute})
			clients := []string{"198.51.100.1", "198.51.100.2", "2001:db8::/64"}
			var allowed [3]atomic.Int64
			var errs atomic.Int64
			together(tc.hits*len(clients), func(i int) {
				c := i % len(clients)
				h := hits.Hit{Client: clients[c], Visitor: fmt.Sprintf("%s agent-%d", clients[c], i), Name: "hits/a"}
				wait, _, err := ls[i%len(ls)].Admit(context.Background(), h)
				switch {
				case err != nil:
					errs.Add(1)
				case wait == 0:
					allowed[c].Add(1)
				}
			})
			if n := errs.Load(); n != 0 {
				t.Fatalf("%d calls failed", n)
			}
			for c := range clients {
				if got := allowed[c].Load(); got != int64(tc.budget) {
					t.Errorf("client %s: %d hits allowed, want exactly %d", clients[c], got, tc.budget)
				}
			}
		})
	}
}

// The same hit seen by several processes at the same instant is a first
// for exactly one of them.
func TestARepeatSeenByProcessesAtOnceIsAFirstOnce(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	ls := processes(t, r, 4, cache.HitLimits{Rate: 1000, RateWindow: time.Minute, DedupWindow: time.Minute})
	const names, copies = 20, 8 // each hit arrives 8 times, 2 at each process
	var firsts [names]atomic.Int64
	var errs atomic.Int64
	together(names*copies, func(i int) {
		n := i % names
		_, earlier, err := ls[i%len(ls)].Admit(context.Background(), visit("198.51.100.1 Firefox/140", fmt.Sprint("hits/", n)))
		if err != nil {
			errs.Add(1)
		}
		if earlier == hits.None {
			firsts[n].Add(1)
		}
	})
	if n := errs.Load(); n != 0 {
		t.Fatalf("%d calls failed", n)
	}
	for n := range firsts {
		if got := firsts[n].Load(); got != 1 {
			t.Errorf("hits/%d: %d firsts among %d copies, want 1", n, got, copies)
		}
	}
}

// A Redis that restarted, or whose scripts were flushed, no longer knows
// the limits' script: the next pipeline loads it again, and no hit fails
// or is admitted twice.
func TestAdmitLoadsItsScriptAgainWhenRedisLostIt(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	rdb := r.DeadlineClient(t)
	l := hitLimits(t, rdb, cache.HitLimits{Rate: 3, RateWindow: time.Hour, DedupWindow: time.Minute}, 2*time.Second)
	ctx := context.Background()
	if _, err := allow(l, "c"); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var allowed atomic.Int64
	together(10, func(int) {
		if wait, err := allow(l, "c"); err != nil {
			t.Errorf("Admit after SCRIPT FLUSH: %v", err)
		} else if wait == 0 {
			allowed.Add(1)
		}
	})
	if got := allowed.Load(); got != 2 {
		t.Errorf("%d more hits allowed, want 2: each hit takes one from the budget, once", got)
	}
}

// On a Redis Cluster both keys of a hit are on one node (one hash tag), so
// the one script may touch them, and hits of many clients spread over the
// nodes.
func TestHitLimitsWorkOnARedisCluster(t *testing.T) {
	t.Parallel()
	cl := testenv.StartRedisCluster(t)
	rdb, err := cache.NewClient(cl.URL(), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	l := hitLimits(t, rdb, cache.HitLimits{Rate: 2, RateWindow: time.Hour, DedupWindow: time.Minute}, 2*time.Second)
	const clients = 30
	var allowed, firsts, errs atomic.Int64
	together(clients*3, func(i int) {
		h := visit(fmt.Sprintf("198.51.100.%d Firefox/140", i%clients), "hits/a")
		wait, earlier, err := l.Admit(context.Background(), h)
		switch {
		case err != nil:
			errs.Add(1)
			t.Log(err)
		case wait == 0:
			allowed.Add(1)
			if earlier == hits.None {
				firsts.Add(1)
			}
		}
	})
	if n := errs.Load(); n != 0 {
		t.Fatalf("%d calls failed", n)
	}
	if got, want := allowed.Load(), int64(2*clients); got != want {
		t.Errorf("%d hits allowed, want %d (a budget of 2 for each of %d clients)", got, want, clients)
	}
	if got, want := firsts.Load(), int64(clients); got != want {
		t.Errorf("%d firsts, want %d (one per visitor)", got, want)
	}
}

// A hit that arrives while a pipeline is stuck on a hung Redis waits for
// it and then for its own, but gives up one timeout after it arrived: a
// hit spends at most one Redis timeout in its limits.
func TestAdmitSpendsAtMostOneTimeoutOnAHungRedis(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	// Long enough that two timeouts stand apart from one on a loaded machine:
	// a hit that waited for the stuck pipeline and then its own, arriving
	// an eighth of a timeout after it, would take 1.875 timeouts, against
	// the bound of 1.5 (at one second, that left a starved machine half a
	// second).
	const timeout = 2 * time.Second
	l := hitLimits(t, r.DeadlineClient(t), cache.HitLimits{Rate: 60, RateWindow: time.Minute, DedupWindow: time.Minute}, timeout)
	if _, err := allow(l, "c"); err != nil { // salt fetched, connection pooled
		t.Fatal(err)
	}
	r.Freeze()
	t.Cleanup(r.Thaw)
	var slowest atomic.Int64
	together(8, func(i int) {
		// Arrivals spread over the first pipeline's flight.
		time.Sleep(time.Duration(i) * timeout / 8)
		start := time.Now()
		wait, _, err := l.Admit(context.Background(), visit(fmt.Sprintf("198.51.100.%d Firefox/140", i), "hits/a"))
		took := time.Since(start)
		if err == nil {
			t.Errorf("hit %d: wait %v and no error with Redis hung", i, wait)
		}
		for {
			s := slowest.Load()
			if int64(took) <= s || slowest.CompareAndSwap(s, int64(took)) {
				break
			}
		}
	})
	if got := time.Duration(slowest.Load()); got > timeout*3/2 {
		t.Errorf("slowest Admit took %v with Redis hung, want about one timeout (%v)", got, timeout)
	}
}

// The mark of a visitor's hit tells a repeat whether the earlier hit is
// known to have created the counter, for every process.
func TestTheMarkSaysWhetherTheEarlierHitCreatedTheCounter(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	ls := processes(t, r, 2, cache.HitLimits{DedupWindow: time.Minute})
	a, b := ls[0], ls[1]
	ctx := context.Background()
	h := visit("198.51.100.1 Firefox/140", "hits/a")
	steps := []struct {
		what string
		do   func() error
		l    hits.Limits
		want hits.Earlier
	}{
		{"first hit", nil, a, hits.None},
		{"repeat while it is being counted", nil, b, hits.Pending},
		{"repeat after it created the counter", func() error { return a.Created(ctx, h) }, b, hits.Created},
		{"repeat after a forget", func() error { return b.Forget(ctx, h) }, a, hits.None},
		{"created of another visitor's hit marks nothing", func() error { return a.Created(ctx, visit("198.51.100.2 x", "hits/a")) }, b, hits.Pending},
	}
	for _, s := range steps {
		if s.do != nil {
			if err := s.do(); err != nil {
				t.Fatalf("%s: %v", s.what, err)
			}
		}
		_, got, err := s.l.Admit(ctx, h)
		if err != nil {
			t.Fatalf("%s: %v", s.what, err)
		}
		if got != s.want {
			t.Errorf("%s: earlier = %v, want %v", s.what, got, s.want)
		}
	}
	if _, got, _ := a.Admit(ctx, visit("198.51.100.2 x", "hits/a")); got != hits.None {
		t.Errorf("the other visitor's first hit: earlier = %v, want None: Created must not create a mark", got)
	}
}
