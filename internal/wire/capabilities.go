package wire

import (
	"context"
	"log/slog"
	"time"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/visitors"
)

// A capability is one feature of the service, declared in one place (a
// file of this package each: live.go, webhooks.go, hits.go, ...): its
// configuration block (a field of Config with its variables, its Validate,
// and its defaults here), what it builds on the core (its store, its domain
// service, what it records or observes on the store's change seam), its
// background jobs (builder.job) and its routes (an app.Capability, whose
// routes declare their access). Load parses and checks every block, and
// Build runs the capabilities in this order after the core. A new feature
// is its own package, its SQL in storage/, its routes in app/, and its
// file and entry here.
type capability struct {
	name     string
	defaults func(c *Config)                          // its block's defaults; nil: it has none
	build    func(b *builder) (app.Capability, error) // nil routes: none of its own
}

var capabilities = []capability{
	{"unique visitors", nil, buildVisitors}, // its settings are in the page hits' block
	{"history", nil, buildHistory},
	{"breakdowns", defaultBreakdowns, buildBreakdowns},
	{"page hits", defaultHits, buildHits},
	{"tickets", nil, buildTickets},
	{"live updates", defaultLive, buildLive},
	{"webhooks", defaultWebhooks, buildWebhooks},
}

// builder is what a capability builds on: the service's core, the
// configuration, and what earlier capabilities made.
type builder struct {
	s   *Service
	ctx context.Context // the start-up's
	cfg Config
	log *slog.Logger

	clientKeys *visitors.Keys
	history    *history.Service
	hits       *hits.Service
}

// job adds a background job, started with the others at the end of Build
// and ended by Close.
func (b *builder) job(name string, run func(ctx context.Context)) { b.s.jobs.add(name, run) }

// now is the store's clock, which tests may replace: one clock for every
// capability.
func (b *builder) now() time.Time { return b.s.Store.Now() }
