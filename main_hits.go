package main

import (
	"github.com/redis/go-redis/v9"

	"countersvc/cache"
	"countersvc/config"
	"countersvc/hits"
)

// hitLimits builds the page-hit abuse limits. Without Redis there are none:
// the state must be shared by every process, and counting must not depend
// on anything but MySQL. A setting of 0 turns a limit off.
func hitLimits(cfg config.Config, rdb redis.UniversalClient) (hits.Limiter, hits.Deduper) {
	if rdb == nil {
		return nil, nil
	}
	var limiter hits.Limiter
	var deduper hits.Deduper
	if cfg.HitsRateLimit > 0 {
		limiter = cache.NewRateLimiter(rdb, cfg.HitsRateLimit, cfg.HitsRateWindow, cfg.RedisTimeout)
	}
	if cfg.HitsDedupWindow > 0 {
		deduper = cache.NewDeduper(rdb, cfg.HitsDedupWindow, cfg.RedisTimeout)
	}
	return limiter, deduper
}
