// Command countersvc serves named counters over HTTP. main only wires the
// pieces together; see README.md for configuration.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	_ "net/http/pprof" // served only on COUNTERS_DEBUG_ADDR
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"countersvc/app"
	"countersvc/cache"
	"countersvc/config"
	"countersvc/counters"
	"countersvc/hits"
	"countersvc/storage"
	"countersvc/tickets"
)

func main() {
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintln(os.Stderr, "countersvc: configuration:", err)
		os.Exit(2)
	}
	log := newLogger(cfg)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("countersvc stopped", "error", err.Error())
		os.Exit(1)
	}
}

func newLogger(cfg config.Config) *slog.Logger {
	level, _ := cfg.SlogLevel()
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(os.Stdout, opts))
	}
	return slog.New(slog.NewJSONHandler(os.Stdout, opts))
}

// run serves until ctx is cancelled (SIGTERM), then lets in-flight requests
// finish before closing Redis and MySQL.
func run(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	db, err := storage.Open(ctx, cfg.MySQLDSN, storage.Options{MaxOpenConns: cfg.MySQLMaxConns, ConnectWait: cfg.MySQLWaitAtBoot, Log: log})
	if err != nil {
		return fmt.Errorf("opening MySQL: %w", err)
	}
	defer db.Close()
	reg.MustRegister(collectors.NewDBStatsCollector(db, "counters"))

	store, err := storage.NewCounterStore(ctx, db)
	if err != nil {
		return fmt.Errorf("preparing statements: %w", err)
	}
	defer store.Close()
	go store.PurgeKeysEvery(ctx, time.Minute, log) // idempotency keys older than 24 h

	var rdb redis.UniversalClient
	if cfg.RedisURL != "" {
		cache.LogRedisTo(log)
		if rdb, err = cache.NewClient(cfg.RedisURL, cfg.RedisTimeout); err != nil {
			return fmt.Errorf("COUNTERS_REDIS_URL: %w", err)
		}
		defer rdb.Close() // after the cache, before MySQL: defers run in reverse
	}
	cached, redisCheck, closeCache := withCache(cfg, store, rdb, reg, log)
	defer closeCache()
	var hitLimiter hits.Limiter
	var hitDeduper hits.Deduper
	if c, ok := cached.(*cache.Store); ok { // without Redis, no limits: see cache.NewHitLimits
		hitLimiter, hitDeduper = cache.NewHitLimits(c, cache.HitLimits{
			Rate: cfg.HitsRateLimit, RateWindow: cfg.HitsRateWindow, DedupWindow: cfg.HitsDedupWindow,
		})
	}
	proxies, _ := cfg.TrustedProxyRanges() // validated by config.Load

	coalescing := counters.WithCoalescing(counters.CoalesceOptions{
		MaxBatch: cfg.CoalesceBatch, MaxInFlight: cfg.CoalesceFlight, Timeout: cfg.MySQLTimeout,
		Observe: coalesceMetrics(reg),
	})
	if !cfg.Coalesce {
		coalescing = counters.WithoutCoalescing()
	}
	svc := counters.NewService(cached, coalescing)
	ticketDB, err := storage.NewTicketStore(ctx, db, storage.TicketStoreOptions{})
	if err != nil {
		return fmt.Errorf("opening the ticket store: %w", err)
	}
	var ticketStore tickets.Store = ticketDB
	if c, ok := cached.(*cache.Store); ok {
		ticketStore = cache.NewTickets(ticketDB, c)
	}
	server := app.New(app.Options{
		Counters:   svc,
		Tickets:    tickets.NewService(ticketStore, svc),
		Log:        log,
		Registry:   reg,
		APIToken:   cfg.APIToken,
		BodyLimit:  cfg.BodyLimit,
		DBTimeout:  cfg.MySQLTimeout,
		ListMaxAge: cfg.ListCacheTTL,
		MySQLCheck: db.PingContext,
		RedisCheck: redisCheck,

		Hits: hits.New(svc, hitLimiter, hitDeduper, hits.Options{
			PublicPrefixes: cfg.PublicPrefixes, Registerer: reg, Log: log,
		}),
		TrustedProxies: proxies,
	})

	if cfg.DebugAddr != "" {
		go func() { log.Warn("debug server stopped", "error", http.ListenAndServe(cfg.DebugAddr, nil)) }()
	}

	errc := make(chan error, 1)
	go func() { errc <- server.Listen(cfg.Addr) }()
	log.Info("countersvc listening", "addr", cfg.Addr)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.ShutdownTimeout.String())
	if err := server.ShutdownWithTimeout(cfg.ShutdownTimeout); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
