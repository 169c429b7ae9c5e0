package cache_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/internal/testenv"
)

const limitTimeout = 100 * time.Millisecond

// hitLimits are the limits on rdb as one process of the service keeps them:
// on the Redis of its cache, here one with no counters behind it.
func hitLimits(t testing.TB, rdb redis.UniversalClient, o cache.HitLimits, timeout time.Duration) hits.Limits {
	t.Helper()
	c := cache.New(counters.Backend{}, rdb, cache.Options{Timeout: timeout})
	t.Cleanup(func() { c.Close() })
	return cache.NewHitLimits(c, o)
}

// rateLimiter is the rate limit of hitLimits alone.
func rateLimiter(t *testing.T, rdb redis.UniversalClient, rate int, timeout time.Duration) hits.Limits {
	t.Helper()
	return hitLimits(t, rdb, cache.HitLimits{Rate: rate, RateWindow: time.Minute}, timeout)
}

// deduper is the dedup of hitLimits alone.
func deduper(t *testing.T, rdb redis.UniversalClient, window, timeout time.Duration) hits.Limits {
	t.Helper()
	return hitLimits(t, rdb, cache.HitLimits{DedupWindow: window}, timeout)
}

// allow asks l for one hit of client (the rate limit's unit) and returns
// how long it must wait, 0 if allowed.
func allow(l hits.Limits, client string) (time.Duration, error) {
	wait, _, err := l.Admit(context.Background(), hits.Hit{Client: client, Visitor: client, Name: "hits/x"})
	return wait, err
}

// visit is a hit of visitor, "<address> <User-Agent>", on name, named as
// hits.Service names it to the limits: the visitor on the name. (It would
// hash both; the limits take any string.)
func visit(visitor, name string) hits.Hit {
	client, _, _ := strings.Cut(visitor, " ")
	return hits.Hit{Client: client, Visitor: visitor + " " + name, Name: name}
}

// first asks l whether visitor's hit on name is a first.
func first(l hits.Limits, visitor, name string) (bool, error) {
	_, earlier, err := l.Admit(context.Background(), visit(visitor, name))
	return earlier == hits.None, err
}

func TestRateLimiterAllowsTheBudgetThenAsksToWait(t *testing.T) {
	t.Parallel()
	rdb := testenv.StartRedis(t).DeadlineClient(t)
	l := rateLimiter(t, rdb, 3, time.Second)
	for i := range 3 {
		if wait, err := allow(l, "198.51.100.1"); err != nil || wait != 0 {
			t.Fatalf("request %d: wait %v, err %v; want allowed", i+1, wait, err)
		}
	}
	wait, err := allow(l, "198.51.100.1")
	if err != nil {
		t.Fatal(err)
	}
	// 3 a minute: the next one is due 20 s after the first.
	if wait <= 0 || wait > 20*time.Second {
		t.Fatalf("4th request: wait %v, want in (0, 20s]", wait)
	}
	if wait, err := allow(l, "198.51.100.2"); err != nil || wait != 0 {
		t.Fatalf("another client: wait %v, err %v; want allowed", wait, err)
	}
}

// Two limiters stand for two processes of the service: one budget per
// client between them.
// A limit that is off costs the hits it would check no round trip: the
// limits say which hits they check, and hits.Service sends them no other.
func TestLimitsCheckOnlyTheHitsOfTheLimitsThatAreOn(t *testing.T) {
	t.Parallel()
	rdb := testenv.StartRedis(t).DeadlineClient(t)
	tests := []struct {
		name                string
		o                   cache.HitLimits
		wantOthers, wantPxy bool
	}{
		{"rate limit only", cache.HitLimits{Rate: 60, RateWindow: time.Minute}, true, false},
		{"repeat window only", cache.HitLimits{DedupWindow: time.Minute}, true, false},
		{"image proxies' budget only", cache.HitLimits{ProxyRate: 600, RateWindow: time.Minute}, false, true},
		{"all on", cache.HitLimits{Rate: 60, RateWindow: time.Minute, DedupWindow: time.Minute, ProxyRate: 600}, true, true},
	}
	for _, tc := range tests {
		l := hitLimits(t, rdb, tc.o, limitTimeout)
		if got := l.Checks(false); got != tc.wantOthers {
			t.Errorf("%s: Checks(false) = %v, want %v", tc.name, got, tc.wantOthers)
		}
		if got := l.Checks(true); got != tc.wantPxy {
			t.Errorf("%s: Checks(true) = %v, want %v", tc.name, got, tc.wantPxy)
		}
	}
}

func TestRateLimiterBudgetIsSharedByProcesses(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	a := rateLimiter(t, r.DeadlineClient(t), 2, time.Second)
	b := rateLimiter(t, r.DeadlineClient(t), 2, time.Second)
	for i, l := range []hits.Limits{a, b} {
		if wait, err := allow(l, "client"); err != nil || wait != 0 {
			t.Fatalf("request %d: wait %v, err %v; want allowed", i+1, wait, err)
		}
	}
	if wait, err := allow(a, "client"); err != nil || wait == 0 {
		t.Fatalf("3rd request: wait %v, err %v; want refused", wait, err)
	}
}

func TestDeduperCountsTheFirstHitOfAClientOnANameOnly(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	a := deduper(t, r.DeadlineClient(t), 30*time.Second, time.Second)
	b := deduper(t, r.DeadlineClient(t), 30*time.Second, time.Second) // another process
	ctx := context.Background()
	steps := []struct {
		d            hits.Limits
		client, name string
		forget       bool
		want         bool
	}{
		{a, "198.51.100.1 Firefox", "hits/a", false, true},
		{a, "198.51.100.1 Firefox", "hits/a", false, false},
		{b, "198.51.100.1 Firefox", "hits/a", false, false},
		{b, "198.51.100.1 Chrome", "hits/a", false, true},
		{a, "198.51.100.1 Firefox", "hits/b", false, true},
		{a, "198.51.100.1 Firefox", "hits/a", true, true}, // after Forget
	}
	for i, s := range steps {
		if s.forget {
			if err := s.d.Forget(ctx, visit(s.client, s.name)); err != nil {
				t.Fatal(err)
			}
		}
		got, err := first(s.d, s.client, s.name)
		if err != nil {
			t.Fatal(err)
		}
		if got != s.want {
			t.Errorf("step %d (%q on %q): first = %v, want %v", i, s.client, s.name, got, s.want)
		}
	}
}

// Nothing the limits store stays for ever: a client's one key lives as long
// as its limits need it, the longer of its newest mark's window and the
// time until its budget is whole again. (That the keys name no client is
// hits/'s part: the limits see only identifiers of the day, see app's
// TestVisitorsLeaveNoTrace.)
func TestLimitKeysExpire(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	rdb := r.DeadlineClient(t)
	ctx := context.Background()
	cases := []struct {
		name     string
		limits   cache.HitLimits
		min, max time.Duration // of the key's TTL after two hits of two visitors
	}{
		{"the dedup window, longer than the budget", cache.HitLimits{Rate: 60, RateWindow: time.Minute, DedupWindow: 30 * time.Second}, 29 * time.Second, 30 * time.Second},
		{"the budget, longer than the dedup window", cache.HitLimits{Rate: 1, RateWindow: time.Minute, DedupWindow: time.Second}, 59 * time.Second, time.Minute},
		{"the budget alone", cache.HitLimits{Rate: 60, RateWindow: time.Minute}, time.Second, 2 * time.Second},
		{"the dedup window alone", cache.HitLimits{DedupWindow: 30 * time.Second}, 29 * time.Second, 30 * time.Second},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := hitLimits(t, rdb, c.limits, time.Second)
			client := fmt.Sprintf("c%d", i)
			for _, v := range []string{"v1", "v2"} {
				if _, _, err := l.Admit(ctx, hits.Hit{Client: client, Visitor: v, Name: "hits/a"}); err != nil {
					t.Fatal(err)
				}
			}
			keys, err := rdb.Keys(ctx, "*{"+client+"}*").Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != 1 {
				t.Fatalf("keys = %q, want the client's one key", keys)
			}
			ttl, err := rdb.PTTL(ctx, keys[0]).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl <= c.min || ttl > c.max {
				t.Errorf("key %q has TTL %v, want in (%v, %v]", keys[0], ttl, c.min, c.max)
			}
		})
	}
}

// A client that keeps coming back before its key expires does not grow it
// without end: marks past their window are removed once there are many.
func TestAClientsPastMarksAreRemoved(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	rdb := r.DeadlineClient(t)
	ctx := context.Background()
	// Each hit moves the client's budget 10ms on, so the key outlives the
	// first round's marks by about 300ms.
	const window, n = 100 * time.Millisecond, 40
	l := hitLimits(t, rdb, cache.HitLimits{Rate: 1000, RateWindow: 10 * time.Second, DedupWindow: window}, time.Second)
	admit := func(round int) {
		for i := range n {
			if _, _, err := l.Admit(ctx, hits.Hit{Client: "c1", Visitor: fmt.Sprintf("v%d-%d", round, i), Name: "hits/a"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	admit(0)
	time.Sleep(window + 50*time.Millisecond)
	admit(1)
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys = %q (%v), want the client's one key", keys, err)
	}
	fields, err := rdb.HLen(ctx, keys[0]).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The second round's marks and the rate limit's field; the first
	// round's marks are all past.
	if fields > n+1 {
		t.Errorf("the client's key holds %d fields, want at most %d: past marks were kept", fields, n+1)
	}
}

// The limits protect the service; they must not hold it up. Each call
// gives up after its timeout when Redis hangs or is gone, and says so.
func TestLimitsGiveUpQuicklyWhenRedisFails(t *testing.T) {
	t.Parallel()
	for _, failure := range testenv.RedisFailures {
		t.Run(failure.Name, func(t *testing.T) {
			r := testenv.StartRedis(t)
			rdb := r.DeadlineClient(t)
			l := hitLimits(t, rdb, cache.HitLimits{Rate: 60, RateWindow: time.Minute, DedupWindow: time.Minute}, limitTimeout)
			ctx := context.Background()
			testenv.WaitUntil(t, "the limits answer", func() bool { _, err := allow(l, "c"); return err == nil }) // salt fetched, script loaded
			failure.Break(r)
			calls := map[string]func() error{
				"Admit":  func() error { _, err := allow(l, "c"); return err },
				"Forget": func() error { return l.Forget(ctx, visit("c", "hits/x")) },
			}
			for name, call := range calls {
				start := time.Now()
				err := call()
				// Generous: the point is "a timeout", not "go-redis's 5 s".
				if took := time.Since(start); took > 2*time.Second {
					t.Errorf("%s took %v with Redis %s, want about %v", name, took, failure.Name, limitTimeout)
				}
				if err == nil {
					t.Errorf("%s: no error with Redis %s", name, failure.Name)
				}
			}
		})
	}
}

// The limits call Redis through the cache's circuit breaker: once the
// cache has found Redis hung, a hit's limits skip it at once instead of
// waiting a timeout each, and the hit counts without them.
func TestLimitsSkipARedisTheCacheHasGivenUpOn(t *testing.T) {
	t.Parallel()
	st := newStack(t, cache.Options{Cooldown: time.Minute})
	l := cache.NewHitLimits(st.cache, cache.HitLimits{Rate: 60, RateWindow: time.Minute, DedupWindow: time.Minute})
	// Salt fetched, script loaded, connection pooled: on a loaded machine
	// that may take more than the one timeout the first hit has.
	testenv.WaitUntil(t, "the limits answer", func() bool { _, err := allow(l, "c"); return err == nil })
	st.increment(t, "hung", 1)
	st.redis.Freeze()
	for range 3 { // enough failed reads to open the circuit
		st.get(t, "hung")
	}
	// No call reaches Redis (a time bound on the 20 checks, 5 timeouts
	// against the 20 that waiting would cost, proved the same on an idle
	// machine only).
	for range 20 {
		if _, err := allow(l, "c"); err == nil {
			t.Fatal("Admit: no error with Redis hung")
		}
	}
	for _, op := range []string{"hit_limits"} {
		if n := st.metric(t, "counters_cache_errors_total", "op="+op); n != 0 {
			t.Errorf("%v %s calls reached the hung Redis, want none while the circuit is open", n, op)
		}
	}
}
