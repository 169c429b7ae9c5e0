// Package wire is the one place that builds the service from its
// configuration: main.go and the tests (internal/apptest) both call Build,
// so what the tests run is what production runs.
//
// The wrappers of the counter store, from the bottom up:
//
//	storage (MySQL; every write reports its changes through the change
//	seam, to recorders in its transaction and observers after its commit)
//	-> cache (Redis read views, invalidated after writes)
//	-> coalesce (concurrent increments as few statements)
//	-> the cache's lease wait (a write Redis did not confirm waits it out)
//	-> counters (validation)
//	-> tickets and hits (consumers of counters.Service) -> app (HTTP)
//
// cache.Store.Backend puts the coalescer and the lease wait in that order.
//
// The store's change seam has one recorder, webhook events (package webhooks), and one
// observer, live updates (package live).
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

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/coalesce"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/internal/config"
	"github.com/countersvc/countersvc/keys"
	"github.com/countersvc/countersvc/live"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/tickets"
	"github.com/countersvc/countersvc/visitors"
	"github.com/countersvc/countersvc/webhooks"
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
	Visitors    *visitors.Counter // nil when COUNTERS_VISITORS is off
	Hooks       *storage.HookStore
	Relay       *webhooks.Relay
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
	s.DB, err = storage.Open(ctx, cfg.MySQL.DSN, storage.Options{MaxOpenConns: cfg.MySQL.MaxOpenConns, ConnectWait: cfg.MySQL.ConnectWait, Log: log})
	if err != nil {
		return nil, fmt.Errorf("opening MySQL: %w", err)
	}
	s.onClose(s.DB.Close)
	s.Registry.MustRegister(collectors.NewDBStatsCollector(s.DB.DB, "counters"))
	if s.Store, err = storage.NewCounterStore(ctx, s.DB); err != nil {
		return nil, fmt.Errorf("preparing statements: %w", err)
	}
	s.onClose(s.Store.Close)
	s.Store.History = cfg.MySQL.History
	go s.Store.PurgeKeysEvery(ctx, purgeEvery, log)
	backend := counters.BackendOf(s.Store)

	// Coalescing: concurrent increments as few statements, above the cache
	// so that one invalidation serves a whole round.
	var between func(counters.Store) counters.Store
	if cfg.Coalesce.On {
		between = func(store counters.Store) counters.Store {
			return coalesce.New(store, coalesce.Options{MaxRound: cfg.Coalesce.MaxRound, MaxInFlight: cfg.Coalesce.MaxInFlight, Registerer: s.Registry,
				Now: func() time.Time { return s.Store.Now() }}) // the store's clock, which tests may replace
		}
	}

	// Redis: read views in front of the store, and the page-hit limits.
	var rdb redis.UniversalClient
	switch {
	case cfg.Cache.RedisURL == "":
		log.Info("redis cache disabled: COUNTERS_REDIS_URL is empty")
		if between != nil {
			backend.Store = between(backend.Store)
		}
	default:
		cache.LogRedisTo(log)
		if rdb, err = cache.NewClient(cfg.Cache.RedisURL, cfg.Cache.Timeout); err != nil {
			return nil, err
		}
		s.onClose(rdb.Close)
		s.Cache = cache.New(backend, rdb, cache.Options{Lease: cfg.Cache.Lease, ClockSkew: cfg.Cache.ClockSkew, ListTTL: cfg.Cache.ListTTL, Timeout: cfg.Cache.Timeout,
			Registerer: s.Registry, Log: log, Between: between})
		s.onClose(s.Cache.Close) // before the client: Close runs closers last first
		backend = s.Cache.Backend()
	}

	// Webhooks: crossings recorded inside each change's transaction (one
	// recorder on the change seam), delivered by a relay in every process.
	hookAPI, err := s.webhooks(ctx, cfg.Webhooks, log)
	if err != nil {
		return nil, err
	}
	s.Counters = counters.NewService(backend)

	// Live updates: one observer of the store's change seam. It reads
	// watched counters from the MySQL store itself (never a cache: a stream
	// must not go back) and hears other processes over Redis.
	lo := live.Options{Reader: s.Store, CheckEvery: cfg.Live.CheckEvery, MaxPerAddr: cfg.Live.MaxPerAddr, MaxStreams: cfg.Live.MaxStreams,
		Timeout: cfg.MySQL.Timeout, Registerer: s.Registry, Log: log}
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
		hitLimits = cache.NewHitLimits(s.Cache, cache.HitLimits(cfg.Hits.Limits))
	}
	// Visitors: salts and sketches in MySQL, counted in process (see
	// visitors/); the salted identifiers also key the limits.
	visitorStore := storage.NewVisitorStore(s.DB)
	clientKeys := visitors.NewKeys(visitorStore, func() time.Time { return s.Store.Now() })
	historySvc := history.NewService(s.Store, func() time.Time { return s.Store.Now() })
	if cfg.Hits.Visitors {
		s.Visitors = visitors.New(visitorStore, visitors.Options{Keys: clientKeys, Now: func() time.Time { return s.Store.Now() }, Flush: cfg.Hits.VisitorsFlush, Log: log})
		historySvc.Visitors = s.Visitors
		runCtx, stop := context.WithCancel(ctx)
		stopped := make(chan struct{})
		go func() { s.Visitors.Run(runCtx); close(stopped) }()
		s.onClose(func() error { stop(); <-stopped; return nil }) // before MySQL closes: the last flush
	}
	hitRules := hits.New(s.Counters, hitLimits, hits.Options{
		PublicPrefixes: cfg.Hits.PublicPrefixes, ImageProxies: cfg.Hits.ImageProxyAgents(), Registerer: s.Registry, Log: log,
		Keys: clientKeys, Visitors: s.Visitors,
	})
	proxies, _ := cfg.HTTP.TrustedProxyRanges() // validated by config.Load

	// API keys: who may reach the private API, and what each key may touch.
	s.Keys = keys.New(storage.NewKeyStore(s.DB), keys.Options{AdminToken: cfg.Keys.AdminToken, LookupTimeout: cfg.MySQL.Timeout, Registerer: s.Registry, Log: log})
	go s.Keys.TouchEvery(ctx, touchEvery)
	if s.Keys.Protected() {
		log.Warn("COUNTERS_API_TOKEN is unset: the private API answers only clients on this machine (loopback) and API keys; set it to reach the API from elsewhere")
	}

	// HTTP.
	o := app.Options{
		Counters:   s.Counters,
		History:    historySvc,
		Tickets:    s.Tickets,
		Log:        log,
		Registry:   s.Registry,
		Keys:       s.Keys,
		BodyLimit:  cfg.HTTP.BodyLimit,
		DBTimeout:  cfg.MySQL.Timeout,
		ListTTL:    cfg.Cache.ListTTL,
		MySQLCheck: s.DB.Check,

		ReadTimeout:  cfg.HTTP.ReadTimeout,
		WriteTimeout: cfg.HTTP.WriteTimeout,
		IdleTimeout:  cfg.HTTP.IdleTimeout,
		Drain:        s.Drain,

		Live:          s.Live,
		LiveHeartbeat: cfg.Live.Heartbeat,

		Hits:           hitRules,
		TrustedProxies: proxies,
	}
	if s.Cache != nil {
		o.RedisCheck = s.Cache.Check
	}
	o.Webhooks = hookAPI
	s.App = app.New(o)
	return s, nil
}

// webhooks registers the hooks' recorder on the store and starts the
// relay and the hooks' reloads, which end with ctx.
func (s *Service) webhooks(ctx context.Context, cfg config.Webhooks, log *slog.Logger) (webhooks.API, error) {
	var recorder *storage.HookRecorder
	reload := func(ctx context.Context) {
		if err := recorder.Reload(ctx); err != nil {
			log.Warn("webhooks: reloading the hooks failed; the periodic reload follows", "error", err)
		}
	}
	// A change of a hook reloads this process's hooks at once, and the
	// others' through Redis when there is one; each process also reloads
	// every storage.ReloadEvery, the bound when Redis is away.
	var notices *cache.Notices
	s.Hooks = storage.NewHookStore(s.DB, func(ctx context.Context) {
		reload(ctx)
		if notices != nil {
			notices.Notify(ctx)
		}
	})
	recorder = storage.NewHookRecorder(s.Hooks, log)
	if err := recorder.Reload(ctx); err != nil {
		return nil, fmt.Errorf("reading the webhooks: %w", err)
	}
	go recorder.ReloadEvery(ctx, storage.ReloadEvery)
	if s.Cache != nil {
		notices = s.Cache.Notices("webhooks")
		go notices.Listen(ctx, func(ctx context.Context) {
			ctx, cancel := context.WithTimeout(ctx, storage.ReloadEvery)
			defer cancel()
			reload(ctx)
		})
	}
	// One clock, the store's (which tests may replace), starts a rotation's
	// grace and ends it, at the calls and for the purge.
	now := func() time.Time { return s.Store.Now() }
	s.Hooks.Now = now
	go s.Hooks.PurgeEvery(ctx, purgeEvery, log)
	s.Store.Record(recorder)
	s.Store.Observe(recorder)

	guard := webhooks.NewGuard(cfg.AllowPrivate)
	s.Relay = webhooks.NewRelay(s.Hooks, webhooks.RelayOptions{Workers: cfg.Workers, Guard: guard, Registerer: s.Registry, Log: log, Now: now})
	recorder.OnRecord = s.Relay.Wake
	go s.Relay.Run(ctx)
	return webhooks.NewService(s.Hooks, webhooks.Options{MaxPerKey: cfg.MaxPerKey, Guard: guard, Now: now}), nil
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
