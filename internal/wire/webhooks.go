package wire

import (
	"context"
	"errors"
	"fmt"
	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/webhooks"
	"time"
)

// Webhooks is the webhooks' (package webhooks: its service, guard and relay).
type Webhooks struct {
	AllowPrivate bool `env:"COUNTERS_WEBHOOK_ALLOW_PRIVATE"`
	MaxPerKey    int  `env:"COUNTERS_WEBHOOK_MAX_PER_KEY"`
	Workers      int  `env:"COUNTERS_WEBHOOK_WORKERS"`
	// AlertsEvery is how often each process evaluates every alert; the
	// contract allows an alert at most a minute late.
	AlertsEvery time.Duration `env:"COUNTERS_WEBHOOK_ALERTS_EVERY"`
	// Lease is the relay's (webhooks.RelayOptions.Lease), no variable:
	// tests shorten it to see a lost process's calls made again.
	Lease time.Duration
}

// Validate checks the webhooks' settings.
func (w Webhooks) Validate() error {
	if w.MaxPerKey < 1 || w.Workers < 1 {
		return errors.New("COUNTERS_WEBHOOK_MAX_PER_KEY and COUNTERS_WEBHOOK_WORKERS: must be at least 1")
	}
	if w.AlertsEvery < time.Second || w.AlertsEvery > time.Minute {
		return errors.New("COUNTERS_WEBHOOK_ALERTS_EVERY: must be from 1s to 1m (an alert is at most a minute late)")
	}
	return nil
}

// defaultWebhooks is the webhooks' block of Defaults.
func defaultWebhooks(c *Config) {
	c.Webhooks = Webhooks{MaxPerKey: webhooks.DefaultMaxPerKey, Workers: webhooks.DefaultWorkers, AlertsEvery: webhooks.AlertEvery, Lease: webhooks.DefaultLease}
}

// buildWebhooks: crossings recorded inside each change's transaction (one
// recorder on the change seam), delivered by a relay in every process.
func buildWebhooks(b *builder) (app.Capability, error) {
	s, cfg, log := b.s, b.cfg.Webhooks, b.log
	var recorder *storage.HookRecorder
	reload := func(ctx context.Context) {
		if err := recorder.Reload(ctx); err != nil {
			log.Warn("webhooks: reloading the hooks failed; the periodic reload follows", "error", err)
		}
		if s.Relay != nil {
			s.Relay.Wake() // a hook enabled again made its events due
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
	if err := recorder.Reload(b.ctx); err != nil {
		return nil, fmt.Errorf("reading the webhooks: %w", err)
	}
	b.job("webhooks' reload", func(ctx context.Context) { recorder.ReloadEvery(ctx, storage.ReloadEvery) })
	if s.Cache != nil {
		notices = s.Cache.Notices("webhooks")
		b.job("webhooks' notices", func(ctx context.Context) {
			notices.Listen(ctx, func(ctx context.Context) {
				ctx, cancel := context.WithTimeout(ctx, storage.ReloadEvery)
				defer cancel()
				reload(ctx)
			})
		})
	}
	// One clock, the store's, starts a rotation's grace and ends it, at the
	// calls and for the purge.
	s.Hooks.Now = b.now
	b.job("webhook events' purge", func(ctx context.Context) { s.Hooks.PurgeEvery(ctx, purgeEvery, log) })
	s.Store.Record(recorder)
	s.Store.Observe(recorder)

	guard := webhooks.NewGuard(cfg.AllowPrivate)
	s.Relay = webhooks.NewRelay(s.Hooks, webhooks.RelayOptions{Workers: cfg.Workers, Guard: guard, Registerer: s.Registry, Log: log, Now: b.now, Lease: cfg.Lease})
	recorder.OnRecord = s.Relay.Wake
	b.job("webhook relay", s.Relay.Run)
	// Alerts sum history's own quarter hours, apart from the increments:
	// every process evaluates them, and the store records each transition
	// once.
	counts := storage.HistoryOf(s.Store)
	alerts := &webhooks.Evaluator{Store: s.Hooks, Counts: counts, Now: b.now, Log: log, OnRecord: s.Relay.Wake, Every: cfg.AlertsEvery}
	b.job("webhook alerts", alerts.Run)
	return app.Webhooks(webhooks.NewService(s.Hooks, webhooks.Options{MaxPerKey: cfg.MaxPerKey, Guard: guard, Now: b.now, Counts: counts})), nil
}
