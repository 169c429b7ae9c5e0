package wire

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/geoip"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/visitors"
)

// Hits is the page hits': their rules (package hits) and their abuse
// limits (the cache's, kept in Redis). Their unique visitors have a block
// of their own (Visitors).
type Hits struct {
	PublicPrefixes []string `env:"COUNTERS_PUBLIC_PREFIXES" envSeparator:","`
	ImageProxies   []string `env:"COUNTERS_IMAGE_PROXIES" envSeparator:","` // see ImageProxyAgents
	Limits         HitLimits
	// GeoIPDB names the MMDB file that page hits' country label comes
	// from (see geoip/); empty: every country is "(unknown)".
	GeoIPDB string `env:"COUNTERS_GEOIP_DB"`
}

// HitLimits are cache.HitLimits (see its fields) with their variables.
// internal/wire converts one into the other, so that the compiler keeps
// the two lists of fields in step.
type HitLimits struct {
	Rate        int           `env:"COUNTERS_HITS_RATE_LIMIT"`
	RateWindow  time.Duration `env:"COUNTERS_HITS_RATE_WINDOW"`
	DedupWindow time.Duration `env:"COUNTERS_HITS_DEDUP_WINDOW"`
	ProxyRate   int           `env:"COUNTERS_IMAGE_PROXY_RATE_LIMIT"`
}

// Validate checks the page-hit settings. Rate limit and dedup window 0
// turn them off; both also stay off without Redis.
func (h Hits) Validate() error {
	if len(h.PublicPrefixes) == 0 {
		return errors.New("COUNTERS_PUBLIC_PREFIXES: give at least one prefix, such as hits/")
	}
	for _, p := range h.PublicPrefixes {
		if err := hits.ValidatePublicPrefix(p); err != nil {
			return fmt.Errorf("COUNTERS_PUBLIC_PREFIXES: %v", err)
		}
	}
	for _, p := range h.ImageProxies {
		if strings.TrimSpace(p) == "" {
			return errors.New("COUNTERS_IMAGE_PROXIES: a User-Agent prefix is empty; say none to treat no proxy specially")
		}
	}
	return h.Limits.Validate()
}

// Validate checks the limits' settings.
func (l HitLimits) Validate() error {
	if l.Rate < 0 {
		return errors.New("COUNTERS_HITS_RATE_LIMIT: must be 0 (off) or more")
	}
	if l.Rate > 0 && l.RateWindow <= 0 {
		return errors.New("COUNTERS_HITS_RATE_WINDOW: must be a positive duration such as 1m")
	}
	if l.DedupWindow < 0 {
		return errors.New("COUNTERS_HITS_DEDUP_WINDOW: must be 0 (off) or a duration such as 30s")
	}
	if l.ProxyRate < 0 {
		return errors.New("COUNTERS_IMAGE_PROXY_RATE_LIMIT: must be 0 (off) or more")
	}
	return nil
}

// ImageProxyAgents are the User-Agent prefixes of COUNTERS_IMAGE_PROXIES;
// "none" (an empty variable means the default) gives none.
func (h Hits) ImageProxyAgents() []string {
	if len(h.ImageProxies) == 1 && h.ImageProxies[0] == "none" {
		return nil
	}
	return h.ImageProxies
}

// defaultHits is the page hits' block of Defaults.
func defaultHits(c *Config) {
	c.Hits = Hits{
		PublicPrefixes: []string{hits.DefaultPublicPrefix},
		ImageProxies:   []string{"github-camo"},
		Limits: HitLimits{
			Rate:        60,
			RateWindow:  time.Minute,
			DedupWindow: 30 * time.Second,
			ProxyRate:   600,
		},
	}
}

// buildHits: the page-hit rules, with their limits in Redis when there is
// one (see cache.NewHitLimits), and their routes (app/public.go), whose
// badges show history's count of today.
func buildHits(b *builder) (app.Capability, error) {
	var limits hits.Limits
	if b.s.Cache != nil {
		limits = cache.NewHitLimits(b.s.Cache, cache.HitLimits(b.cfg.Hits.Limits))
	}
	bots := visitors.NewBots()
	labels, err := hitLabeller(b.cfg, bots, b.log)
	if err != nil {
		return nil, err
	}
	o := hits.Options{
		PublicPrefixes: b.cfg.Hits.PublicPrefixes, ImageProxies: b.cfg.Hits.ImageProxyAgents(), Registerer: b.s.Registry, Log: b.log,
		Keys: b.clientKeys, Visitors: b.s.Visitors, Bots: bots, Labels: labels,
	}
	if limits != nil && b.s.coalescer != nil {
		// An admitted hit's increment starts from the limits' answer.
		o.Chain = b.s.Cache.Starter(b.s.coalescer)
	}
	svc := hits.New(b.s.Counters, limits, o)
	return app.PageHits(svc, b.s.Counters, b.history), nil
}

// hitLabeller labels page hits when their labels are counted
// (breakdownsOn: breakdowns on, and history on, which breakdowns are
// made of), with the countries of COUNTERS_GEOIP_DB when it names a file;
// bots are the crawlers the visitor count leaves out. Otherwise it returns
// nil: labels the store would drop must not cost a hit its User-Agent's
// parse and its country's look-up.
func hitLabeller(cfg Config, bots *visitors.Bots, log *slog.Logger) (*hits.Labeller, error) {
	if !cfg.breakdownsOn() {
		return nil, nil
	}
	if cfg.Hits.GeoIPDB == "" {
		log.Info("page hits' countries are (unknown): COUNTERS_GEOIP_DB names no IP-to-country database (scripts/geoip fetches one)")
		return hits.NewLabeller(nil, bots), nil
	}
	db, err := geoip.Open(cfg.Hits.GeoIPDB)
	if err != nil {
		return nil, fmt.Errorf("COUNTERS_GEOIP_DB: %v", err)
	}
	log.Info("page hits' countries from COUNTERS_GEOIP_DB", "type", db.Type())
	return hits.NewLabeller(db, bots), nil
}
