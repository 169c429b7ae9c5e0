package systemtest_test

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/metrictest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// Writers increment and readers read a few counters through HTTP while Redis
// has its writes paused, is stopped, is killed and comes back empty. No
// request may fail or take longer than the Redis faults may cost it, and no
// read may show less than a value acknowledged before it began (increments
// are positive, so values only grow and an older state shows as a smaller
// value).
func TestReadsNeverGoBackUnderRedisFaults(t *testing.T) {
	t.Parallel()
	const lease, skew, timeout = 250 * time.Millisecond, 50 * time.Millisecond, cache.DefaultTimeout
	// What the faults may cost a request: a lease and its skew waited out,
	// and two Redis timeouts (its own invalidation's, and a round's it
	// queued behind). The rest is MySQL and the CPU, which a loaded machine
	// stretched past half a second (three test binaries on two cores) and
	// past 0.7 s (a load of 25): 1.5 s for them. A Redis call without a
	// deadline would wait out the whole freeze, which is longer.
	slowest := lease + skew + 2*timeout + 1500*time.Millisecond
	if slowest > testenv.RedisFrozen-time.Second/4 {
		t.Fatalf("a request may take %v, too close to the %v Redis stays frozen to tell a hung call", slowest, testenv.RedisFrozen)
	}
	rs := testenv.StartRedis(t)
	env := apptest.NewWithCache(t, rs.URL(), func(c *wire.Config) { c.Cache.Lease, c.Cache.ClockSkew, c.Cache.Timeout = lease, skew, timeout })
	reg := env.Registry

	// Enough writers that increments of several counters share statements,
	// whose entries are dropped together.
	names := []string{"chaos/a", "chaos/b b", "chaos/c%2Fd", "chaos/é", "chaos/e", "chaos/f", "chaos/g", "chaos/h"}
	acked := make([]atomic.Int64, len(names))
	var failures, slowestSeen atomic.Int64
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 10 {
			t.Errorf(format, args...)
		}
	}
	path := func(i int) string { return "/v1/counters/" + url.PathEscape(names[i]) }

	stop := make(chan struct{})
	var wg sync.WaitGroup
	worker := func(write bool) {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			i := rand.IntN(len(names))
			floor := acked[i].Load()
			start := time.Now()
			var res apptest.Response
			var err error
			if write {
				res, err = env.TryDo("POST", path(i)+"/increment", "")
			} else {
				res, err = env.TryDo("GET", path(i), "")
			}
			elapsed := time.Since(start)
			for d := slowestSeen.Load(); int64(elapsed) > d && !slowestSeen.CompareAndSwap(d, int64(elapsed)); d = slowestSeen.Load() {
			}
			switch {
			case err != nil:
				fail("request failed: %v", err)
			case elapsed > slowest:
				fail("request took %v, want at most %v", elapsed, slowest)
			case !write && res.Status == http.StatusNotFound && floor == 0:
			case res.Status != http.StatusOK:
				fail("%s: status %d %s", names[i], res.Status, res.Body)
			default:
				var body struct{ Value int64 }
				res.Decode(t, &body)
				if write {
					for v := acked[i].Load(); v < body.Value && !acked[i].CompareAndSwap(v, body.Value); v = acked[i].Load() {
					}
				} else if body.Value < floor {
					fail("%s: read %d after %d was acknowledged", names[i], body.Value, floor)
				}
			}
			time.Sleep(time.Millisecond)
		}
	}
	for range 6 {
		wg.Add(1)
		go worker(true)
	}
	for range 4 {
		wg.Add(1)
		go worker(false)
	}
	hits := func() float64 { return metrictest.Sum(t, reg, "counters_cache_hits_total", "view=counter") }

	// Reads served from Redis before the faults, however slow the machine.
	testenv.WaitUntil(t, "a read served from Redis before the faults", func() bool { return hits() > 0 })
	rs.RunFaults(t)
	before := hits()
	testenv.WaitUntil(t, "reads served from Redis again", func() bool { return hits() > before+50 })
	close(stop)
	wg.Wait()

	for i := range names {
		res := env.Do(t, "GET", path(i), "")
		var body struct{ Value int64 }
		res.Decode(t, &body)
		if body.Value != acked[i].Load() {
			t.Errorf("%s: final read %d, last acknowledged %d", names[i], body.Value, acked[i].Load())
		}
	}
	t.Logf("slowest request %v; hits %v, misses %v, fallbacks %v, errors %v", time.Duration(slowestSeen.Load()), hits(),
		metrictest.Sum(t, reg, "counters_cache_misses_total"), metrictest.Sum(t, reg, "counters_cache_fallbacks_total"),
		metrictest.Sum(t, reg, "counters_cache_errors_total"))
}

func TestReadyzReportsRedisDownAsDegraded(t *testing.T) {
	t.Parallel()
	rs := testenv.StartRedis(t)
	env := apptest.NewWithCache(t, rs.URL())
	tests := []struct {
		name  string
		fault func()
		want  string
	}{
		{"up", func() {}, `"status":"ok","mysql":"ok","redis":"ok"`},
		{"down", rs.Kill, `"status":"degraded","mysql":"ok","redis":"down"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fault()
			res := env.Do(t, "GET", "/readyz", "")
			if res.Status != http.StatusOK || !strings.Contains(string(res.Body), tt.want) {
				t.Fatalf("readyz: %d %s, want 200 with %s", res.Status, res.Body, tt.want)
			}
		})
	}
}

// Writes that touch many counters at once (coalesced increments of many
// counters, a batch) leave no cached entry behind: the next read of each
// counter shows the write.
func TestWritesOfManyCountersInvalidateEachOne(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	e := apptest.NewWithCache(t, r.URL())
	const n = 12
	path := func(i int) string { return "/v1/counters/many%2F" + strconv.Itoa(i) }
	for i := 0; i < n; i++ {
		e.Do(t, "PUT", path(i), `{"value": 0}`)
		e.Do(t, "GET", path(i), "") // now cached
	}
	var wg sync.WaitGroup
	for round := 0; round < 5; round++ {
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if r, err := e.TryDo("POST", path(i)+"/increment", ""); err != nil || r.Status != 200 {
					t.Errorf("increment: %v %v", r.Status, err)
				}
			}(i)
		}
		wg.Wait()
		for i := 0; i < n; i++ {
			var c struct{ Value int64 }
			e.Do(t, "GET", path(i), "").Decode(t, &c)
			if c.Value != int64(round+1) {
				t.Fatalf("round %d: counter %d reads %d, want %d", round, i, c.Value, round+1)
			}
		}
	}
	b := e.Do(t, "POST", "/v1/counters/batch", `{"increments":[{"name":"many/0","by":10},{"name":"many/1","by":10}]}`)
	if b.Status != 200 {
		t.Fatalf("batch: %d %s", b.Status, b.Body)
	}
	var c struct{ Value int64 }
	e.Do(t, "GET", path(1), "").Decode(t, &c)
	if c.Value != 15 {
		t.Fatalf("after batch: %d, want 15", c.Value)
	}
}
