package wire

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/storage"
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
//
// A capability that extends the write path (what a step also counts, as
// breakdowns count labels) declares its tally, which the core registers
// with the counter store before its first write, and the field of an
// increment's body that carries its kind of counters.Extra (at most one
// capability has one: a step carries one Extra).
//
// What a build leaves on the builder for later ones it names in provides,
// and what it takes from earlier ones in needs: Build refuses an order in
// which a capability comes before what it needs (checkOrder), so the
// order of the list is declared rather than known.
type capability struct {
	name     string
	defaults func(c *Config)                          // its block's defaults; nil: it has none
	build    func(b *builder) (app.Capability, error) // nil routes: none of its own
	tally    func(c *Config) storage.Tally            // what its steps also count; nil: none
	field    func(c *Config) app.ExtraField           // the body's field of its Extra; nil: none
	needs    []string                                 // what it takes from the builder
	provides []string                                 // what it leaves there
}

// What capabilities leave on the builder for each other.
const (
	clientKeys   = "client keys"   // builder.clientKeys
	visitorCount = "visitor count" // Service.Visitors
	historySvc   = "history"       // builder.history
	pageHits     = "page hits"     // builder.hits
)

var capabilities = []capability{
	{name: "unique visitors", build: buildVisitors, provides: []string{clientKeys, visitorCount}}, // its settings are in the page hits' block
	{name: "history", defaults: defaultHistory, build: buildHistory, needs: []string{visitorCount}, provides: []string{historySvc}},
	{name: "breakdowns", defaults: defaultBreakdowns, build: buildBreakdowns, tally: (*Config).labelsTally, field: (*Config).labelsField},
	{name: "page hits", defaults: defaultHits, build: buildHits, needs: []string{clientKeys, visitorCount}, provides: []string{pageHits}},
	{name: "tickets", build: buildTickets},
	{name: "live updates", defaults: defaultLive, build: buildLive},
	{name: "webhooks", defaults: defaultWebhooks, build: buildWebhooks},
	{name: "annotations", build: buildAnnotations},
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

// writePath registers the capabilities' tallies with store, in the order
// of the list (the order of their locks), and returns the body field of
// the one whose steps carry an Extra.
func writePath(cfg *Config, store *storage.CounterStore) (app.ExtraField, error) {
	var field app.ExtraField
	for _, c := range capabilities {
		if c.tally != nil {
			store.Count(c.tally(cfg))
		}
		if c.field == nil {
			continue
		}
		if field.Key != "" {
			return field, fmt.Errorf("%s: a step carries one Extra, and %q's already does", c.name, field.Key)
		}
		field = c.field(cfg)
	}
	return field, nil
}

// checkOrder returns an error naming the first capability of list that
// needs what no capability before it provides; the app, built after all
// of them, needs the history and the page hits.
func checkOrder(list []capability) error {
	provided := map[string]bool{}
	for _, c := range list {
		for _, n := range c.needs {
			if !provided[n] {
				return fmt.Errorf("capability %q needs the %s, which no capability before it provides", c.name, n)
			}
		}
		for _, p := range c.provides {
			provided[p] = true
		}
	}
	for _, n := range []string{historySvc, pageHits} {
		if !provided[n] {
			return fmt.Errorf("the HTTP application needs the %s, which no capability provides", n)
		}
	}
	return nil
}
