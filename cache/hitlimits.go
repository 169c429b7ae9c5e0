package cache

import (
	"time"

	"countersvc/hits"
)

// HitLimits are the settings of the page-hit abuse limits.
type HitLimits struct {
	Rate        int           // hits per client per RateWindow; 0 turns the rate limit off
	RateWindow  time.Duration // the rate limit's window
	DedupWindow time.Duration // repeat hits within it are not counted; 0 turns the dedup off
}

// NewHitLimits returns the page-hit limits, kept in the Redis of c and
// called as c calls it: with its deadline, through its circuit breaker,
// under its key prefix. A Redis that the cache has given up on is then
// skipped by the limits at once too, and hits.Service lets the hits through.
// A limit that is off is nil. The state of the limits lives in Redis alone,
// so that every process of the service shares it; there are none without
// Redis.
func NewHitLimits(c *Store, o HitLimits) (hits.Limiter, hits.Deduper) {
	keys := newClientKeys(c.redisCalls)
	var l hits.Limiter
	var d hits.Deduper
	if o.Rate > 0 {
		l = newRateLimiter(c.redisCalls, keys, o.Rate, o.RateWindow)
	}
	if o.DedupWindow > 0 {
		d = &deduper{calls: c.redisCalls, keys: keys, window: o.DedupWindow}
	}
	return l, d
}
