package cache_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"countersvc/cache"
	"countersvc/internal/apptest"
	"countersvc/internal/testenv"
)

// Writers increment and readers read a few counters through HTTP while Redis
// has its writes paused, is stopped, is killed and comes back empty. No
// request may fail or take a second, and no read may show less than a value
// acknowledged before it began (increments are positive, so values only
// grow and an older state shows as a smaller value).
func TestReadsNeverGoBackUnderRedisFaults(t *testing.T) {
	rs := testenv.StartRedis(t)
	reg := prometheus.NewRegistry()
	env := apptest.NewWithCache(t, rs.URL(), cache.Options{Registerer: reg})
	ctl := redis.NewClient(&redis.Options{Addr: rs.Addr(), MaxRetries: -1})
	defer ctl.Close()

	names := []string{"chaos/a", "chaos/b b", "chaos/c%2Fd", "chaos/é"}
	acked := make([]atomic.Int64, len(names))
	var failures atomic.Int64
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
			switch {
			case err != nil:
				fail("request failed: %v", err)
			case elapsed > time.Second:
				fail("request took %v", elapsed)
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
	for range 2 {
		wg.Add(1)
		go worker(true)
	}
	for range 4 {
		wg.Add(1)
		go worker(false)
	}
	hits := func() float64 { return gathered(t, reg, "counters_cache_hits_total", "view=counter") }

	time.Sleep(500 * time.Millisecond)
	if hits() == 0 {
		t.Error("no read was served from Redis before the faults")
	}
	ctx := context.Background()
	if err := ctl.Do(ctx, "CLIENT", "PAUSE", 800, "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	rs.Freeze()
	time.Sleep(800 * time.Millisecond)
	rs.Thaw()
	time.Sleep(300 * time.Millisecond)
	rs.Kill()
	time.Sleep(800 * time.Millisecond)
	rs.Start(t)
	before := hits()
	waitUntil(t, "reads served from Redis again", func() bool { return hits() > before+50 })
	close(stop)
	wg.Wait()

	waitUntil(t, "distrusted entries repaired", func() bool { return gathered(t, reg, "counters_cache_distrusted") == 0 })
	for i := range names {
		res := env.Do(t, "GET", path(i), "")
		var body struct{ Value int64 }
		res.Decode(t, &body)
		if body.Value != acked[i].Load() {
			t.Errorf("%s: final read %d, last acknowledged %d", names[i], body.Value, acked[i].Load())
		}
	}
	t.Logf("hits %v, misses %v, fallbacks %v, errors %v", hits(),
		gathered(t, reg, "counters_cache_misses_total"), gathered(t, reg, "counters_cache_fallbacks_total"),
		gathered(t, reg, "counters_cache_errors_total"))
}

func TestReadyzReportsRedisDownAsDegraded(t *testing.T) {
	rs := testenv.StartRedis(t)
	env := apptest.NewWithCache(t, rs.URL(), cache.Options{})
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
