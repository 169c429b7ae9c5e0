package app_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// A request as GitHub's image proxy sends it for a README's badge: from
// one of its few addresses (here behind our trusted proxy), with its
// User-Agent, for whichever reader is viewing.
var camo = []string{"X-Forwarded-For: 140.82.115.9", "User-Agent: github-camo (876de43e)", camoAccept}

// proxyEnv is the service with the default limits but these image-proxy
// settings; proxies nil keeps the default (github-camo).
func proxyEnv(t *testing.T, proxies []string, proxyRate int) *apptest.Env {
	r := testenv.StartRedis(t)
	return apptest.New(t, hitLimits(r, 60, 30*time.Second), func(c *wire.Config) {
		c.HTTP.TrustedProxies = []string{"127.0.0.1/32"}
		if proxies != nil {
			c.Hits.ImageProxies = proxies
		}
		c.Hits.Limits.ProxyRate = proxyRate
		// Budgets come back continuously, one per window/budget: an hour
		// keeps a slow machine from earning one back within a test.
		c.Hits.Limits.RateWindow = time.Hour
	})
}

// Every view of a README through the proxy counts, although they all come
// from one address with one User-Agent, up to the proxy's own budget per
// counter; then the badge draws the limit.
func TestEveryViewThroughAnImageProxyCounts(t *testing.T) {
	t.Parallel()
	const budget = 70 // more than an address's 60, and than one view per dedup window
	env := proxyEnv(t, nil, budget)
	for i := 1; i <= budget; i++ {
		res := env.Do(t, "GET", "/v1/hits/hits%2Freadme/badge.svg", "", camo...)
		if res.Status != 200 || !parseBadge(t, res.Body).shows(itoa(i)) {
			t.Fatalf("view %d: status %d, badge %q", i, res.Status, parseBadge(t, res.Body).texts)
		}
	}
	res := env.Do(t, "GET", "/v1/hits/hits%2Freadme/badge.svg", "", camo...)
	if res.Status != 429 || !parseBadge(t, res.Body).shows("rate limited") {
		t.Fatalf("view past the proxy's budget: status %d, body %s", res.Status, res.Body)
	}
	// The budget is per counter: another README's badge still counts.
	if res := env.Do(t, "GET", "/v1/hits/hits%2Fother/badge.svg", "", camo...); res.Status != 200 {
		t.Fatalf("another counter through the proxy: status %d", res.Status)
	}
	// A browser on the proxy's address is an ordinary visitor: its own
	// budget, and its reload is a repeat.
	browser := []string{"X-Forwarded-For: 140.82.115.9", "User-Agent: Firefox/140", chromeImgAccept}
	for range 2 {
		if res := env.Do(t, "GET", "/v1/hits/hits%2Freadme/badge.svg", "", browser...); res.Status != 200 || !parseBadge(t, res.Body).shows(itoa(budget+1)) {
			t.Fatalf("browser: status %d, badge %q", res.Status, parseBadge(t, res.Body).texts)
		}
	}
	if got := env.Stored(t, "hits/readme"); got != budget+1 {
		t.Errorf("stored %d, want %d", got, budget+1)
	}
}

// The proxy is told what GitHub's guidance asks: revalidate on every view,
// by ETag, so that each view reaches the service. Other clients keep
// no-store.
func TestImageProxiesGetNoCacheWithAnETag(t *testing.T) {
	t.Parallel()
	env := proxyEnv(t, nil, 600)
	env.Do(t, "PUT", "/v1/counters/hits%2Fe", `{"value": 7}`)
	for _, path := range []string{"/v1/hits/hits%2Fe/badge.svg", "/v1/counters/hits%2Fe/badge.svg"} {
		res := env.Do(t, "GET", path, "", camo...)
		if cc, tag := res.Header.Get("Cache-Control"), res.Header.Get("ETag"); res.Status != 200 || cc != "no-cache" || tag == "" {
			t.Errorf("%s through the proxy: status %d, Cache-Control %q, ETag %q; want no-cache with an ETag", path, res.Status, cc, tag)
		}
		if cc := env.Do(t, "GET", path, "", chromeImgAccept).Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s from a browser: Cache-Control %q, want no-store", path, cc)
		}
	}
	// The read-only badge of an unchanged counter revalidates as 304.
	first := env.Do(t, "GET", "/v1/counters/hits%2Fe/badge.svg", "", camo...)
	again := env.Do(t, "GET", "/v1/counters/hits%2Fe/badge.svg", "", append(camo, "If-None-Match: "+first.Header.Get("ETag"))...)
	if again.Status != http.StatusNotModified {
		t.Errorf("revalidation of an unchanged badge: status %d, want 304", again.Status)
	}
}

// COUNTERS_IMAGE_PROXIES=none: a proxy is a client like any other, so its
// views within the dedup window count once.
func TestImageProxyTreatmentCanBeTurnedOff(t *testing.T) {
	t.Parallel()
	env := proxyEnv(t, []string{"none"}, 600)
	for range 3 {
		env.Do(t, "GET", "/v1/hits/hits%2Foff/badge.svg", "", camo...)
	}
	if got := env.Stored(t, "hits/off"); got != 1 {
		t.Errorf("stored %d, want 1: without the treatment the proxy's views are repeats", got)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
