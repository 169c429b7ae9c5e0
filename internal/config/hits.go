package config

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/countersvc/countersvc/hits"
)

// Hits is the page hits': their rules (package hits), their abuse limits
// (the cache's, kept in Redis) and their unique visitors (package visitors).
type Hits struct {
	PublicPrefixes []string `env:"COUNTERS_PUBLIC_PREFIXES" envSeparator:","`
	ImageProxies   []string `env:"COUNTERS_IMAGE_PROXIES" envSeparator:","` // see ImageProxyAgents
	Limits         HitLimits
	Visitors       bool          `env:"COUNTERS_VISITORS"`
	VisitorsFlush  time.Duration `env:"COUNTERS_VISITORS_FLUSH"`
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
	if err := h.Limits.Validate(); err != nil {
		return err
	}
	if h.VisitorsFlush <= 0 {
		return errors.New("COUNTERS_VISITORS_FLUSH: must be a positive duration such as 5s")
	}
	return nil
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
