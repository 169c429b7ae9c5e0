package app_test

import (
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// hitLimits configures the service with r as its Redis and these abuse
// limits; 0 leaves a limit off. A limit is off while Redis does not answer
// within COUNTERS_REDIS_TIMEOUT (fail open), and its default 100 ms, beside
// three other tests on a loaded two-core machine, Redis was seen not to
// keep: the tests that assert a limit then ran alone. Redis gets 5 s here
// instead, so that they run in parallel; a test of what a hung Redis
// costs sets the default back (redisDefaultTimeout).
func hitLimits(r *testenv.Redis, perMinute int, dedup time.Duration) apptest.Option {
	return func(c *wire.Config) {
		c.Cache.RedisURL = r.URL()
		c.Cache.Timeout = 5 * time.Second
		c.Hits.Limits.Rate, c.Hits.Limits.RateWindow, c.Hits.Limits.DedupWindow = perMinute, time.Minute, dedup
	}
}

// redisDefaultTimeout undoes hitLimits' patience: each call to a hung
// Redis costs the default's 100 ms, not 5 s.
func redisDefaultTimeout(c *wire.Config) { c.Cache.Timeout = cache.DefaultTimeout }

// quickLease trusts cache entries for 100 ms, not the default's second: a
// write whose invalidation a failed Redis cannot confirm is answered only
// once the lease has passed, and a test of what keeps working while Redis
// fails (hits, visitors, streams) would otherwise wait a second for each
// of its writes. What the lease guarantees is the cache's tests' to prove.
func quickLease(c *wire.Config) { c.Cache.Lease = 100 * time.Millisecond }

// twoProcesses runs two service processes on one database and one Redis,
// each with its own connections, as two replicas behind a balancer.
func twoProcesses(t *testing.T, perMinute int, dedup time.Duration, more ...apptest.Option) (a, b *apptest.Env, r *testenv.Redis) {
	t.Helper()
	r = testenv.StartRedis(t)
	opts := append([]apptest.Option{hitLimits(r, perMinute, dedup)}, more...)
	a = apptest.New(t, opts...)
	b = apptest.NewWithDSN(t, a.DSN, opts...)
	return a, b, r
}

func TestRepeatHitsAreNotCountedAcrossProcesses(t *testing.T) {
	t.Parallel()
	a, b, _ := twoProcesses(t, 0, 30*time.Second)
	firefox, chrome := "User-Agent: Firefox/140", "User-Agent: Chrome/140"
	steps := []struct {
		env   *apptest.Env
		name  string
		agent string
		want  int64
	}{
		{a, "hits/a", firefox, 1},
		{a, "hits/a", firefox, 1}, // reload
		{b, "hits/a", firefox, 1}, // reload, other replica
		{b, "hits/a", chrome, 2},  // another browser on the same address
		{a, "hits/b", firefox, 1}, // another page
		{b, "hits/b", chrome, 2},
		{a, "hits/a", chrome, 2},
	}
	for i, s := range steps {
		if got := s.env.Hit(t, s.name, s.agent); got != s.want {
			t.Fatalf("step %d (%s on %s): value %d, want %d", i, s.agent, s.name, got, s.want)
		}
	}
	// The badge counts through the same rule.
	if res := b.Do(t, "GET", "/v1/hits/hits%2Fa/badge.svg", "", firefox); res.Status != 200 || !parseBadge(t, res.Body).shows("2") {
		t.Fatalf("repeat badge: status %d, %s", res.Status, res.Body)
	}
	for name, want := range map[string]int64{"hits/a": 2, "hits/b": 2} {
		if got := a.Stored(t, name); got != want {
			t.Errorf("%s stored %d, want %d", name, got, want)
		}
	}
}

// A repeat hit on a counter deleted within the window counts afresh rather
// than failing.
func TestRepeatHitOnADeletedCounterCountsAgain(t *testing.T) {
	t.Parallel()
	a, _, _ := twoProcesses(t, 0, 30*time.Second)
	a.Hit(t, "hits/gone")
	if res := a.Do(t, "DELETE", "/v1/counters/hits%2Fgone", ""); res.Status != 204 {
		t.Fatalf("delete: %d", res.Status)
	}
	if got := a.Hit(t, "hits/gone"); got != 1 {
		t.Fatalf("repeat after delete: value %d, want 1", got)
	}
}

func TestRateLimitIsSharedByProcessesAndSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	const perMinute = 4
	a, b, _ := twoProcesses(t, perMinute, 0)
	for i := range perMinute {
		env := []*apptest.Env{a, b}[i%2]
		env.Hit(t, "hits/r")
	}
	for _, env := range []*apptest.Env{a, b} {
		for _, path := range []string{"/v1/hits/hits%2Fr", "/v1/hits/hits%2Fr/badge.svg", "/v1/hits/hits%2Fother"} {
			res := env.Do(t, "GET", path, "")
			if res.Status != 429 || res.ErrorCode() != "rate_limited" {
				t.Fatalf("%s over the limit: status %d, body %s", path, res.Status, res.Body)
			}
			// 4 a minute: the next hit is due within 15 s.
			secs, err := strconv.Atoi(res.Header.Get("Retry-After"))
			if err != nil || secs < 1 || secs > 15 {
				t.Errorf("Retry-After %q, want 1 to 15 seconds", res.Header.Get("Retry-After"))
			}
			if res.Header.Get("Access-Control-Allow-Origin") != "*" {
				t.Errorf("429 without CORS header: the snippet could not read it")
			}
		}
	}
	if got := a.Stored(t, "hits/r"); got != perMinute {
		t.Errorf("stored %d, want %d: refused hits must not count", got, perMinute)
	}
	// The read-only badge and the snippet are not hits: not limited.
	for _, path := range []string{"/v1/counters/hits%2Fr/badge.svg", "/v1/snippet.js"} {
		if res := a.Do(t, "GET", path, ""); res.Status != 200 {
			t.Errorf("%s while limited: status %d", path, res.Status)
		}
	}
}

// Counting must not depend on Redis: with it gone or hung, every hit counts
// (no limits), and nothing fails.
func TestHitsCountWhenRedisFails(t *testing.T) {
	t.Parallel()
	for _, failure := range testenv.RedisFailures {
		t.Run(failure.Name, func(t *testing.T) {
			t.Parallel()
			a, b, r := twoProcesses(t, 2, 30*time.Second, redisDefaultTimeout, quickLease)
			a.Hit(t, "hits/f") // limits in use: salt fetched, connections pooled
			failure.Break(r)
			for i := int64(2); i <= 5; i++ {
				env := []*apptest.Env{a, b}[i%2]
				if got := env.Hit(t, "hits/f"); got != i {
					t.Fatalf("hit %d with Redis %s: value %d", i, failure.Name, got)
				}
			}
			if got := a.Stored(t, "hits/f"); got != 5 {
				t.Errorf("stored %d, want 5", got)
			}
		})
	}
}

// X-Forwarded-For names the client only when it comes from a trusted proxy,
// and then only its part written by trusted proxies: the rightmost address
// that is not one of them.
func TestClientAddressComesFromTrustedProxiesOnly(t *testing.T) {
	t.Parallel()
	loopback := netip.MustParsePrefix("127.0.0.0/8")
	proxy := netip.MustParsePrefix("10.0.0.0/8")
	tests := []struct {
		name    string
		trusted []netip.Prefix
		first   string // X-Forwarded-For of the first hit
		second  string // and of the second, with a limit of 1
		limited bool   // whether the second is the same client
	}{
		{"untrusted peer: header ignored", nil, "198.51.100.1", "198.51.100.2", true},
		{"trusted peer: client from header", []netip.Prefix{loopback}, "198.51.100.1", "198.51.100.2", false},
		{"trusted peer: same client", []netip.Prefix{loopback}, "198.51.100.1", "198.51.100.1", true},
		{"spoofed left part ignored", []netip.Prefix{loopback}, "198.51.100.1", "203.0.113.9, 198.51.100.1", true},
		{"chain of trusted proxies", []netip.Prefix{loopback, proxy}, "198.51.100.1, 10.1.2.3", "198.51.100.2, 10.9.9.9", false},
		{"chain of trusted proxies, same client", []netip.Prefix{loopback, proxy}, "198.51.100.1, 10.1.2.3", "6.6.6.6, 198.51.100.1, 10.9.9.9", true},
		{"port in header", []netip.Prefix{loopback}, "198.51.100.1:4711", "198.51.100.1", true},
		{"one IPv6 /64 is one client", []netip.Prefix{loopback}, "2001:db8::1", "2001:db8::2", true},
		{"another IPv6 /64", []netip.Prefix{loopback}, "2001:db8::1", "2001:db8:0:1::1", false},
		{"garbage stops the walk at the proxy", []netip.Prefix{loopback}, "nonsense", "other nonsense", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := testenv.StartRedis(t) // each case its own budgets
			env := apptest.New(t, hitLimits(r, 1, 0), func(c *wire.Config) {
				c.HTTP.TrustedProxies = prefixStrings(tc.trusted)
			})
			env.Hit(t, "hits/p", "X-Forwarded-For: "+tc.first)
			res := env.Do(t, "GET", "/v1/hits/hits%2Fp", "", "X-Forwarded-For: "+tc.second)
			if limited := res.Status == 429; limited != tc.limited {
				t.Fatalf("second hit: status %d; want limited = %v", res.Status, tc.limited)
			}
		})
	}
}

// prefixStrings writes ranges as COUNTERS_TRUSTED_PROXIES takes them.
func prefixStrings(ps []netip.Prefix) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
