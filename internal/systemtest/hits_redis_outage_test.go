package systemtest_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// hitsResult is counters_hits_total{result} of one process.
func hitsResult(t *testing.T, env *apptest.Env, result string) int64 {
	t.Helper()
	families, err := env.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "counters_hits_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == result {
				return int64(m.GetCounter().GetValue())
			}
		}
	}
	return 0
}

// Ways Redis goes away during hits, beyond testenv's: stopped cleanly
// (connections closed) and writes paused (CLIENT PAUSE, as during a
// failover), which holds the limits' script.
var hitOutages = append([]struct {
	Name  string
	Break func(*testenv.Redis)
}{
	{"stopped", func(r *testenv.Redis) {
		rdb := redis.NewClient(&redis.Options{Addr: r.Addr()})
		defer rdb.Close()
		rdb.Do(context.Background(), "SHUTDOWN", "NOSAVE") // answers nothing: the server is gone
	}},
	{"writes paused", func(r *testenv.Redis) {
		rdb := redis.NewClient(&redis.Options{Addr: r.Addr()})
		defer rdb.Close()
		rdb.Do(context.Background(), "CLIENT", "PAUSE", 60000, "WRITE")
	}},
}, testenv.RedisFailures...)

// While Redis fails in the middle of a stream of hits on two processes,
// every hit is answered 200, none waits on the limits for more than a
// timeout (plus the cache's own timeout for its invalidation), and the
// count is exact: the stored value is the number of hits the processes
// counted, and every other answered hit was a repeat. The outages run in
// parallel, each on servers of its own: a subtest is mostly hits waiting
// out the timeout and the lease.
func TestHitsDuringARedisOutageAreAnsweredAndCountedExactly(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, outage := range hitOutages {
		t.Run(outage.Name, func(t *testing.T) {
			t.Parallel()
			r := testenv.StartRedis(t)
			opts := []apptest.Option{hitLimits(r, 100000, 30*time.Second), func(c *wire.Config) {
				c.Cache.Timeout = timeout
				// Every hit counted during the outage is a write whose
				// invalidation Redis cannot confirm, answered only once
				// the lease is over (cache/: TestAWriteWhoseInvalidation
				// TimedOutIsAnsweredAfterTheLease): a second by default,
				// 20 of them a worker, most of each subtest's 27 s on an
				// idle machine. A lease of its own keeps that wait short;
				// what this test asserts does not depend on it.
				c.Cache.Lease = 200 * time.Millisecond
				c.HTTP.TrustedProxies = []string{"127.0.0.1/32"}
			}}
			a := apptest.New(t, opts...)
			b := apptest.NewWithDSN(t, a.DSN, opts...)
			a.Hit(t, "hits/o") // limits in use: salt fetched, connections pooled
			b.Hit(t, "hits/o", "User-Agent: other")

			const workers, each = 8, 30
			var answered, failed atomic.Int64
			var slowest atomic.Int64
			var wg sync.WaitGroup
			broken := make(chan struct{})
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						if i == each/3 && w == 0 {
							outage.Break(r)
							close(broken)
						}
						// Each visitor comes twice: the second is a repeat
						// while Redis answers, a count when it does not.
						visitor := fmt.Sprintf("X-Forwarded-For: 198.51.%d.%d", w, i/2)
						env := []*apptest.Env{a, b}[i%2]
						start := time.Now()
						res, err := env.TryDo("GET", "/v1/hits/hits%2Fo", "", visitor)
						took := time.Since(start)
						if err != nil || res.Status != 200 {
							failed.Add(1)
							t.Errorf("hit: %v, status %d, body %s", err, res.Status, res.Body)
							continue
						}
						answered.Add(1)
						for s := slowest.Load(); int64(took) > s && !slowest.CompareAndSwap(s, int64(took)); s = slowest.Load() {
						}
					}
				}()
			}
			wg.Wait()
			<-broken
			if failed.Load() > 0 {
				t.Fatalf("%d of %d hits failed", failed.Load(), workers*each)
			}
			counted := hitsResult(t, a, "counted") + hitsResult(t, b, "counted")
			repeats := hitsResult(t, a, "repeat") + hitsResult(t, b, "repeat")
			if got := a.Stored(t, "hits/o"); got != counted {
				t.Errorf("stored %d, but the processes counted %d hits", got, counted)
			}
			if got, want := counted+repeats, answered.Load()+2; got != want {
				t.Errorf("%d counted + %d repeats, want %d answered hits", counted, repeats, want)
			}
			// Generous for a loaded machine; the limits' own bound is
			// tested in cache/ (TestAdmitSpendsAtMostOneTimeoutOnAHungRedis).
			if got, limit := time.Duration(slowest.Load()), 2*timeout+2*time.Second; got > limit {
				t.Errorf("slowest hit took %v, want under %v", got, limit)
			}
		})
	}
}

// The same visitor's hit reaching two processes at the same instant is
// counted once.
func TestARepeatReachingTwoProcessesAtOnceCountsOnce(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	// A generous Redis deadline: this test is about exactness, and on a
	// loaded machine a limit that times out lets its hit through.
	slow := func(c *wire.Config) { c.Cache.Timeout = 2 * time.Second }
	a := apptest.New(t, hitLimits(r, 0, 30*time.Second), slow)
	b := apptest.NewWithDSN(t, a.DSN, hitLimits(r, 0, 30*time.Second), slow)
	for _, env := range []*apptest.Env{a, b} { // salt fetched, script loaded
		env.Hit(t, "hits/warm", "User-Agent: warm-up")
	}
	const visitors = 10
	var wg sync.WaitGroup
	for v := range visitors {
		for _, env := range []*apptest.Env{a, b, a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := env.TryDo("GET", "/v1/hits/hits%2Fsame", "", fmt.Sprintf("User-Agent: agent-%d", v))
				if err != nil || res.Status != 200 {
					t.Errorf("hit: %v, status %d", err, res.Status)
				}
			}()
		}
	}
	wg.Wait()
	if got := a.Stored(t, "hits/same"); got != visitors {
		t.Errorf("stored %d, want %d: one count per visitor", got, visitors)
	}
}

// hitLimits configures the service with r as its Redis and these abuse
// limits.
func hitLimits(r *testenv.Redis, perMinute int, dedup time.Duration) apptest.Option {
	return func(c *wire.Config) {
		c.Cache.RedisURL = r.URL()
		c.Hits.Limits.Rate, c.Hits.Limits.RateWindow, c.Hits.Limits.DedupWindow = perMinute, time.Minute, dedup
	}
}
