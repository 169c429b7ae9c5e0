package main

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"countersvc/cache"
	"countersvc/config"
	"countersvc/counters"
)

// withCache puts the Redis cache in front of store when there is a Redis
// client (COUNTERS_REDIS_URL is set). It returns the store to serve from, the
// Redis readiness check (nil when the cache is off) and a function that
// closes the cache; the caller closes the client after it.
func withCache(cfg config.Config, store counters.Store, rdb redis.UniversalClient, reg prometheus.Registerer, log *slog.Logger) (counters.Store, func(context.Context) error, func()) {
	if rdb == nil {
		log.Info("redis cache disabled: COUNTERS_REDIS_URL is empty")
		return store, nil, func() {}
	}
	c := cache.New(store, rdb, cache.Options{
		TTL:        cfg.CacheTTL,
		ListTTL:    cfg.ListCacheTTL,
		Timeout:    cfg.RedisTimeout,
		Registerer: reg,
		Log:        log,
	})
	return c, c.Check, func() { c.Close() }
}
