package main

import (
	"github.com/redis/go-redis/v9"

	"countersvc/cache"
	"countersvc/config"
	"countersvc/counters"
)

// openRedis connects to COUNTERS_REDIS_URL. ContextTimeoutEnabled makes
// go-redis honour each call's deadline (COUNTERS_REDIS_TIMEOUT), so a hung
// Redis delays a request by that much at most instead of go-redis's own
// read timeout of seconds.
func openRedis(cfg config.Config) (redis.UniversalClient, error) {
	opt, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, err
	}
	opt.ContextTimeoutEnabled = true
	return redis.NewClient(opt), nil
}

// hitLimits builds the page-hit abuse limits. Without Redis there are none:
// the state must be shared by every process, and counting must not depend
// on anything but MySQL. A setting of 0 turns a limit off.
func hitLimits(cfg config.Config, rdb redis.UniversalClient) (counters.HitLimiter, counters.HitDeduper) {
	if rdb == nil {
		return nil, nil
	}
	var limiter counters.HitLimiter
	var deduper counters.HitDeduper
	if cfg.HitsRateLimit > 0 {
		limiter = cache.NewRateLimiter(rdb, cfg.HitsRateLimit, cfg.HitsRateWindow, cfg.RedisTimeout)
	}
	if cfg.HitsDedupWindow > 0 {
		deduper = cache.NewDeduper(rdb, cfg.HitsDedupWindow, cfg.RedisTimeout)
	}
	return limiter, deduper
}
