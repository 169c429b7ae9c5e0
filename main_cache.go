package main

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"countersvc/cache"
	"countersvc/config"
	"countersvc/counters"
)

// withCache puts the Redis cache in front of store when COUNTERS_REDIS_URL is
// set. It returns the store to serve from, the Redis readiness check (nil
// when the cache is off) and a function that closes the cache, then Redis.
func withCache(cfg config.Config, store counters.Store, reg prometheus.Registerer, log *slog.Logger) (counters.Store, func(context.Context) error, func(), error) {
	if cfg.RedisURL == "" {
		log.Info("redis cache disabled: COUNTERS_REDIS_URL is empty")
		return store, nil, func() {}, nil
	}
	cache.LogRedisTo(log)
	rdb, err := cache.NewClient(cfg.RedisURL, cfg.RedisTimeout)
	if err != nil {
		return nil, nil, nil, err
	}
	c := cache.New(store, rdb, cache.Options{
		TTL:        cfg.CacheTTL,
		ListTTL:    cfg.ListCacheTTL,
		Timeout:    cfg.RedisTimeout,
		Registerer: reg,
		Log:        log,
	})
	return c, c.Check, func() { c.Close(); rdb.Close() }, nil
}
