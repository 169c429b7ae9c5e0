// Package wire is the one place that builds the service from its
// configuration: main.go and the tests (internal/apptest) both call Build,
// so what the tests run is what production runs.
//
// The wrappers of the counter store, from the bottom up:
//
//	storage (MySQL) -> cache (Redis read views, invalidated after writes)
//	-> coalesce (concurrent increments as few statements)
//	-> cache's HoldWrites (a write Redis did not confirm waits out the lease)
//	-> counters (validation)
//	-> tickets and hits (consumers of counters.Service) -> app (HTTP)
//
// The store's change seam has one observer: live updates (package live).
package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"countersvc/app"
	"countersvc/cache"
	"countersvc/coalesce"
	"countersvc/counters"
	"countersvc/history"
	"countersvc/hits"
	"countersvc/internal/config"
	"countersvc/keys"
	"countersvc/live"
	"countersvc/storage"
	"countersvc/tickets"
)

// Service is the running service: its HTTP application and the parts tests
// look into.
type Service struct {
	App      *fiber.App
	Registry *prometheus.Registry

	DB          *storage.DB
	Store       *storage.CounterStore // the MySQL store, under every wrapper
	Cache       *cache.Store          // nil without Redis
	Counters    counters.Service
	TicketStore *storage.TicketStore
	Tickets     tickets.Service
	Keys        *keys.Service
	Drain       *app.Drain // main.go starts it on SIGTERM
	Live        *live.Hub  // live updates: the store's observer, and the streams

	closers []func() error // in the order Close runs them
}

// Build opens MySQL (migrating it) and Redis, and builds the service on
// them. ctx bounds the start-up and, when it ends, stops the background
// work (the purge of expired idempotency keys). On error, everything opened
// so far is closed again.
func Build(ctx context.Context, cfg config.Config, log *slog.Logger) (_ *Service, err error) {
	s := &Service{Registry: prometheus.NewRegistry(), Drain: &app.Drain{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.Registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	// MySQL: the store of record.
	s.DB, err = storage.Open(ctx, cfg.MySQLDSN, storage.Options{MaxOpenConns: cfg.MySQLMaxConns, ConnectWait: cfg.MySQLWaitAtBoot, Log: log})
	if err != nil {
		return nil, fmt.Errorf("opening MySQL: %w", err)
	}
	s.onClose(s.DB.Close)
	s.Registry.MustRegister(collectors.NewDBStatsCollector(s.DB.DB, "counters"))
	if s.Store, err = storage.NewCounterStore(ctx, s.DB); err != nil {
		return nil, fmt.Errorf("preparing statements: %w", err)
	}
	s.onClose(s.Store.Close)
	s.Store.History = cfg.History
	go s.Store.PurgeKeysEvery(ctx, purgeEvery, log)
	var store counters.Store = s.Store

	// Redis: read views in front of the store, and the page-hit limits.
	var rdb redis.UniversalClient
	if cfg.RedisURL == "" {
		log.Info("redis cache disabled: COUNTERS_REDIS_URL is empty")
	} else {
		cache.LogRedisTo(log)
		if rdb, err = cache.NewClient(cfg.RedisURL, cfg.RedisTimeout); err != nil {
			return nil, err
		}
		s.onClose(rdb.Close)
		s.Cache = cache.New(store, rdb, cache.Options{Lease: cfg.CacheLease, ClockSkew: cfg.CacheClockSkew, ListTTL: cfg.ListTTL, Timeout: cfg.RedisTimeout, Registerer: s.Registry, Log: log})
		s.onClose(s.Cache.Close) // before the client: Close runs closers last first
		store = s.Cache
	}

	// Coalescing: concurrent increments as few statements, above the cache
	// so that one invalidation serves a whole round.
	if cfg.Coalesce {
		store = coalesce.New(store, coalesce.Options{MaxRound: cfg.CoalesceRound, MaxInFlight: cfg.CoalesceFlight, Registerer: s.Registry,
			Now: func() time.Time { return s.Store.Now() }}) // the store's clock, which tests may replace
	}
	if s.Cache != nil {
		// Above the coalescer: a write that waits out the cache's lease
		// holds up no round (see cache.Store.HoldWrites).
		store = s.Cache.HoldWrites(store)
	}
	s.Counters = counters.NewService(store)

	// Live updates: one observer of the store's change seam. It reads
	// watched counters from the MySQL store itself (never a cache: a stream
	// must not go back) and hears other processes over Redis.
	lo := live.Options{Reader: s.Store, CheckEvery: cfg.LiveCheckEvery, MaxPerAddr: cfg.LiveMaxPerAddr, MaxStreams: cfg.LiveMaxStreams,
		Timeout: cfg.MySQLTimeout, Registerer: s.Registry, Log: log}
	if s.Cache != nil {
		lo.Transport = s.Cache.Live()
	}
	s.Live = live.New(lo)
	s.Store.Observe(s.Live)
	go s.Live.Run(ctx)
	s.onClose(func() error { s.Live.Close(); return nil })

	// Consumers of the counters service.
	s.TicketStore = storage.NewTicketStore(s.DB, storage.TicketStoreOptions{})
	s.Tickets = tickets.NewService(s.TicketStore, s.Counters)
	var hitLimits hits.Limits
	if s.Cache != nil { // without Redis, no limits: see cache.NewHitLimits
		hitLimits = cache.NewHitLimits(s.Cache, cache.HitLimits{
			Rate: cfg.HitsRateLimit, RateWindow: cfg.HitsRateWindow, DedupWindow: cfg.HitsDedupWindow,
			ProxyRate: cfg.ImageProxyRate,
		})
	}
	hitRules := hits.New(s.Counters, hitLimits, hits.Options{
		PublicPrefixes: cfg.PublicPrefixes, ImageProxies: cfg.ImageProxyAgents(), Registerer: s.Registry, Log: log,
	})
	proxies, _ := cfg.TrustedProxyRanges() // validated by config.Load

	// API keys: who may reach the private API, and what each key may touch.
	s.Keys = keys.New(storage.NewKeyStore(s.DB), keys.Options{AdminToken: cfg.APIToken, Registerer: s.Registry, Log: log})
	go s.Keys.TouchEvery(ctx, touchEvery)
	if s.Keys.Protected() {
		log.Warn("COUNTERS_API_TOKEN is unset: the private API answers only clients on this machine (loopback) and API keys; set it to reach the API from elsewhere")
	}

	// HTTP.
	o := app.Options{
		Counters:   s.Counters,
		History:    history.NewService(s.Store, func() time.Time { return s.Store.Now() }),
		Tickets:    s.Tickets,
		Log:        log,
		Registry:   s.Registry,
		Keys:       s.Keys,
		BodyLimit:  cfg.BodyLimit,
		DBTimeout:  cfg.MySQLTimeout,
		ListTTL:    cfg.ListTTL,
		MySQLCheck: s.DB.Check,

		ReadTimeout:  cfg.ReadTimeout,
		WriteTimeout: cfg.WriteTimeout,
		IdleTimeout:  cfg.IdleTimeout,
		Drain:        s.Drain,

		Live:          s.Live,
		LiveHeartbeat: cfg.LiveHeartbeat,

		Hits:           hitRules,
		TrustedProxies: proxies,
	}
	if s.Cache != nil {
		o.RedisCheck = s.Cache.Check
	}
	s.App = app.New(o)
	return s, nil
}

// purgeEvery is how often expired idempotency keys are deleted.
const purgeEvery = time.Minute

// touchEvery is how often the API keys' last use is written: at most one
// write per key per interval and process.
const touchEvery = time.Minute

// Close releases what Build opened, last opened first: the cache before
// the Redis client, the statements before MySQL. The HTTP application is
// the caller's to shut down first.
func (s *Service) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

func (s *Service) onClose(f func() error) { s.closers = append(s.closers, f) }
