// Package wire is the composition root: it reads the service's
// configuration from the environment (Load) and is the one place that
// builds the service from it: main.go and the tests (internal/apptest)
// both call Build, so what the tests run is what production runs. The
// service is its core (wire.go) and its capabilities (capabilities.go),
// each declared in a file of its own here.
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
// The store's change seam has one recorder, webhook events (package
// webhooks), and two observers, live updates (package live) and the
// webhooks' recorder.
package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/coalesce"
	"github.com/countersvc/countersvc/counters"
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
	App      *app.App
	Registry *prometheus.Registry

	DB          *storage.DB
	Store       *storage.CounterStore // the MySQL store, under every wrapper
	Cache       *cache.Store          // nil without Redis
	Counters    counters.Service
	TicketStore *storage.TicketStore
	Tickets     tickets.Service
	Keys        *keys.Service
	Visitors    *visitors.Counter // nil when COUNTERS_VISITORS is off
	coalescer   *coalesce.Store   // nil when COUNTERS_COALESCE is off
	Hooks       *storage.HookStore
	Relay       *webhooks.Relay
	Drain       *app.Drain // main.go starts it on SIGTERM
	Live        *live.Hub  // live updates: the store's observer, and the streams

	extra   app.ExtraField // the body's field of what else a step counts (writePath)
	jobs    jobs           // the background work, started by Build, ended by Close
	closers []func() error // in the order Close runs them
}

// Build opens MySQL (migrating it) and Redis, and builds the service on
// them: the core (the counter store and its wrappers, the counters
// service, the API keys), then each capability (capabilities.go) in order,
// then the HTTP application over all of them. ctx bounds the start-up
// only: the background jobs run until Close. On error, everything opened
// so far is closed again.
func Build(ctx context.Context, cfg Config, log *slog.Logger) (_ *Service, err error) {
	s := &Service{Registry: prometheus.NewRegistry(), Drain: &app.Drain{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	s.Registry.MustRegister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsScheduler)), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := s.core(ctx, cfg, log); err != nil {
		return nil, err
	}
	if err := checkOrder(capabilities); err != nil {
		return nil, err
	}
	b := &builder{s: s, ctx: ctx, cfg: cfg, log: log}
	var routes []app.Capability
	for _, c := range capabilities {
		r, err := c.build(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		if r != nil {
			routes = append(routes, r)
		}
	}

	proxies, _ := cfg.HTTP.TrustedProxyRanges() // validated by Load
	o := app.Options{
		Counters:     s.Counters,
		Extra:        s.extra,
		Capabilities: routes,
		Log:          log,
		Registry:     s.Registry,
		Keys:         s.Keys,
		BodyLimit:    cfg.HTTP.BodyLimit,
		DBTimeout:    cfg.MySQL.Timeout,
		ListTTL:      cfg.Cache.ListTTL,
		MySQLCheck:   s.DB.Check,

		ReadTimeout:  cfg.HTTP.ReadTimeout,
		WriteTimeout: cfg.HTTP.WriteTimeout,
		IdleTimeout:  cfg.HTTP.IdleTimeout,
		Drain:        s.Drain,

		TrustedProxies: proxies,
	}
	if s.Cache != nil {
		o.RedisCheck = s.Cache.Check
	}
	s.App = app.New(o)
	s.jobs.start()
	return s, nil
}

// core opens MySQL and Redis and builds what every capability stands on:
// the counter store with its wrappers, the counters service, the API keys.
func (s *Service) core(ctx context.Context, cfg Config, log *slog.Logger) (err error) {
	// MySQL: the store of record.
	s.DB, err = storage.Open(ctx, cfg.MySQL.DSN, storage.Options{MaxOpenConns: cfg.MySQL.MaxOpenConns, ConnectWait: cfg.MySQL.ConnectWait, Log: log})
	if err != nil {
		return fmt.Errorf("opening MySQL: %w", err)
	}
	s.onClose(s.DB.Close)
	s.Registry.MustRegister(collectors.NewDBStatsCollector(s.DB.DB, "counters"))
	if s.Store, err = storage.NewCounterStore(ctx, s.DB); err != nil {
		return fmt.Errorf("preparing statements: %w", err)
	}
	s.onClose(s.Store.Close)
	s.jobs.add("idempotency keys' purge", func(ctx context.Context) { s.Store.PurgeKeysEvery(ctx, purgeEvery, log) })
	if s.extra, err = writePath(&cfg, s.Store); err != nil {
		return err
	}
	backend := counters.BackendOf(s.Store)

	// Coalescing: concurrent increments as few statements, above the cache
	// so that one invalidation serves a whole round.
	var between func(counters.Store) counters.Store
	if cfg.Coalesce.On {
		between = func(store counters.Store) counters.Store {
			s.coalescer = coalesce.New(store, coalesce.Options{MaxRound: cfg.Coalesce.MaxRound, MaxInFlight: cfg.Coalesce.MaxInFlight, Registerer: s.Registry,
				Now: func() time.Time { return s.Store.Now() }}) // the store's clock, which tests may replace
			return s.coalescer
		}
	}

	// Redis: read views in front of the store, and the page-hit limits.
	switch {
	case cfg.Cache.RedisURL == "":
		log.Info("redis cache disabled: COUNTERS_REDIS_URL is empty")
		if between != nil {
			backend.Store = between(backend.Store)
		}
	default:
		cache.LogRedisTo(log)
		rdb, err := cache.NewClient(cfg.Cache.RedisURL, cfg.Cache.Timeout)
		if err != nil {
			return err
		}
		s.onClose(rdb.Close)
		s.Cache = cache.New(backend, rdb, cache.Options{Lease: cfg.Cache.Lease, ClockSkew: cfg.Cache.ClockSkew, ListTTL: cfg.Cache.ListTTL, Timeout: cfg.Cache.Timeout,
			Registerer: s.Registry, Log: log, Between: between})
		s.onClose(s.Cache.Close) // before the client: Close runs closers last first
		backend = s.Cache.Backend()
	}
	s.Counters = counters.NewService(backend)

	// API keys: who may reach the private API, and what each key may touch.
	s.Keys = keys.New(storage.NewKeyStore(s.DB), keys.Options{AdminToken: cfg.Keys.AdminToken, LookupTimeout: cfg.MySQL.Timeout, Registerer: s.Registry, Log: log})
	s.jobs.add("API keys' last use", func(ctx context.Context) { s.Keys.TouchEvery(ctx, touchEvery) })
	s.jobs.add("API keys' open streams", s.Keys.RecheckWatches)
	if s.Keys.Protected() {
		log.Warn("COUNTERS_API_TOKEN is unset: the private API answers only clients on this machine (loopback) and API keys; set it to reach the API from elsewhere")
	}
	return nil
}

// purgeEvery is how often expired idempotency keys are deleted.
const purgeEvery = time.Minute

// touchEvery is how often the API keys' last use is written: at most one
// write per key per interval and process.
const touchEvery = time.Minute

// Close stops the background jobs and waits for them (the visitors' last
// flush among them), then releases what Build opened, last opened first:
// the cache before the Redis client, the statements before MySQL. The
// HTTP application is the caller's to shut down first. No goroutine that
// Build started outlives Close.
func (s *Service) Close() error {
	s.jobs.stop()
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}

func (s *Service) onClose(f func() error) { s.closers = append(s.closers, f) }
