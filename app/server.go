// Package app is the HTTP layer: routes, handlers and the mapping of domain
// errors to statuses. It is the only package that knows HTTP.
package app

import (
	"context"
	"log/slog"
	"net/netip"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// Options are the HTTP layer's settings and dependencies.
type Options struct {
	Counters counters.Service
	// Extra is the field of an increment's body (and of each batch item)
	// that says what else it counts, read by the capability that counts
	// it (LabelsField); zero: none.
	Extra ExtraField
	Log   *slog.Logger

	// Capabilities add their own routes, each with its access (History,
	// PageHits, Tickets, Webhooks, Live, ...): the router loops over them.
	// One of them must be PageHits, whose rule of public names the others'
	// public routes ask.
	Capabilities []Capability
	Registry     *prometheus.Registry // metrics are registered here and served at /metrics

	// Keys (required) authenticates every private /v1 request and decides
	// what it may touch, at its route (access.go).
	Keys         *keys.Service
	BodyLimit    int           // bytes; default DefaultBodyLimit
	DBTimeout    time.Duration // deadline of each request's MySQL/Redis work; default DefaultDBTimeout
	ListTTL      time.Duration // how stale a cached list may be (COUNTERS_LIST_TTL); 0: lists show every answered write
	ReadTimeout  time.Duration // a request's arrival, from its first byte (or the connection's opening) to its last; default 10s
	WriteTimeout time.Duration // writing an answer; default 10s
	IdleTimeout  time.Duration // a keep-alive connection's wait for its next request; default 60s
	// ImportTimeout bounds an import (POST /v1/import), its body's arrival
	// included; default 10 minutes.
	ImportTimeout time.Duration

	// Readiness checks, by dependency. MySQL down makes the service unready;
	// the others only report degraded. MySQLCheck's *counters.Error is a
	// state MySQL reports (a Galera node not Synced): /readyz shows its
	// message.
	MySQLCheck func(context.Context) error
	RedisCheck func(context.Context) error // nil: cache disabled

	Drain *Drain // started on SIGTERM; nil: never drains

	// TrustedProxies are the proxies whose X-Forwarded-For is believed (a
	// client's address: the loopback rule of authentication, page hits'
	// limits).
	TrustedProxies []netip.Prefix
}

// Defaults of Options, and so of the service's configuration.
const (
	DefaultBodyLimit    = 64 << 10
	DefaultDBTimeout    = 3 * time.Second
	DefaultReadTimeout  = 10 * time.Second
	DefaultWriteTimeout = 10 * time.Second
	DefaultIdleTimeout  = 60 * time.Second
)

func (o *Options) defaults() {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	if o.BodyLimit == 0 {
		o.BodyLimit = DefaultBodyLimit
	}
	if o.DBTimeout == 0 {
		o.DBTimeout = DefaultDBTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.ImportTimeout == 0 {
		o.ImportTimeout = 10 * time.Minute
	}
}

// App is the service's HTTP application: what its owner serves on a
// listener (Listener), shuts down (ShutdownWithTimeout) and tests look
// into. Named here so that only this package names the HTTP framework.
type App = fiber.App

// New returns the service's HTTP application.
func New(o Options) *App {
	o.defaults()
	m := newMetrics(o.Registry)
	app := fiber.New(fiber.Config{
		AppName:               "countersvc",
		BodyLimit:             o.BodyLimit,
		CaseSensitive:         true,
		StrictRouting:         true,
		UnescapePath:          false, // %2F stays inside one name segment
		ReadTimeout:           o.ReadTimeout,
		WriteTimeout:          o.WriteTimeout,
		IdleTimeout:           o.IdleTimeout,
		DisableStartupMessage: true,
		ErrorHandler:          unrouted(o.Log, m, errorHandler(o.Log)),
		// Believe X-Forwarded-Host/-Proto only from our own proxies; the
		// client address is found by trustedProxies.clientAddr.
		EnableTrustedProxyCheck: true,
		TrustedProxies:          prefixStrings(o.TrustedProxies),
		StreamRequestBody:       true, // for imports; the others' bodies are read by readBody
	})
	streamBodies(app, o.BodyLimit, max(o.ImportTimeout, o.ReadTimeout))
	rejectMalformedRequestLines(app)
	closeSilentlyOnTimeout(app)

	app.Use(middleware(o.Log, m, o.BodyLimit, o.Drain))

	ops := &opsHandlers{mysql: o.MySQLCheck, redis: o.RedisCheck, registry: o.Registry, drain: o.Drain}
	app.Get("/healthz", ops.healthz)
	app.Get("/readyz", ops.readyz)
	app.Get("/metrics", ops.metrics())
	routeDashboard(app)

	budget := newDBBudget(o.DBTimeout)
	r := router{v1: app.Group("/v1"), auth: authenticate(o.Keys, trustedProxies(o.TrustedProxies)), keys: o.Keys,
		dbBudget: budget, proxies: trustedProxies(o.TrustedProxies), drain: o.Drain, writeWait: o.WriteTimeout,
		annotate: annotatorOf(o.Capabilities)}
	h := &counterHandlers{dbBudget: budget, svc: o.Counters, listTTL: o.ListTTL, extra: o.Extra}
	// Capabilities first, page hits the last of them (routedLast): Fiber
	// tries routes in the order they were added, and a capability's static
	// path (GET /v1/hits/breakdown) must win over page hits' parameter
	// (GET /v1/hits/{name}).
	caps, public := routedLast(o.Capabilities)
	r.public = public
	for _, cap := range caps {
		cap.routes(r)
	}
	r.private("GET", "/counters", listAccess(), h.list)
	r.private("POST", "/counters/reset", resetAccess(), h.reset)
	r.private("POST", "/counters/batch", batchAccess(o.Extra), h.batch)
	r.privateName("GET", "/counters/:name", keys.Read, h.get)
	r.privateName("PUT", "/counters/:name", keys.Write, h.set)
	r.privateName("DELETE", "/counters/:name", keys.Write, h.delete)
	r.privateName("POST", "/counters/:name/increment", keys.Write, h.increment)
	r.private("GET", "/export", listAccess(), h.export)
	imports := &importHandlers{svc: h.svc, stepTimeout: o.DBTimeout, timeout: o.ImportTimeout}
	r.private("POST", "/import", importAccess(), imports.importCounters)
	registerKeyRoutes(r, o.Keys)

	// No catch-all: Fiber answers an unknown path 404 and a known path with
	// another method 405 with Allow, both through the error handler.
	return app
}
