package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"countersvc/hits"
)

// validateHits checks the page-hit settings. Rate limit and dedup window 0
// turn them off; both also stay off without Redis.
func (c Config) validateHits() error {
	if len(c.PublicPrefixes) == 0 {
		return errors.New("COUNTERS_PUBLIC_PREFIXES: give at least one prefix, such as hits/")
	}
	for _, p := range c.PublicPrefixes {
		if err := hits.ValidatePublicPrefix(p); err != nil {
			return fmt.Errorf("COUNTERS_PUBLIC_PREFIXES: %v", err)
		}
	}
	if _, err := c.TrustedProxyRanges(); err != nil {
		return err
	}
	if c.HitsRateLimit < 0 {
		return errors.New("COUNTERS_HITS_RATE_LIMIT: must be 0 (off) or more")
	}
	if c.HitsRateLimit > 0 && c.HitsRateWindow <= 0 {
		return errors.New("COUNTERS_HITS_RATE_WINDOW: must be a positive duration such as 1m")
	}
	if c.HitsDedupWindow < 0 {
		return errors.New("COUNTERS_HITS_DEDUP_WINDOW: must be 0 (off) or a duration such as 30s")
	}
	for _, p := range c.ImageProxies {
		if strings.TrimSpace(p) == "" {
			return errors.New("COUNTERS_IMAGE_PROXIES: a User-Agent prefix is empty; say none to treat no proxy specially")
		}
	}
	if c.ImageProxyRate < 0 {
		return errors.New("COUNTERS_IMAGE_PROXY_RATE_LIMIT: must be 0 (off) or more")
	}
	if c.VisitorsFlush <= 0 {
		return errors.New("COUNTERS_VISITORS_FLUSH: must be a positive duration such as 5s")
	}
	return nil
}

// ImageProxyAgents are the User-Agent prefixes of COUNTERS_IMAGE_PROXIES;
// "none" (an empty variable means the default) gives none.
func (c Config) ImageProxyAgents() []string {
	if len(c.ImageProxies) == 1 && c.ImageProxies[0] == "none" {
		return nil
	}
	return c.ImageProxies
}

// TrustedProxyRanges parses COUNTERS_TRUSTED_PROXIES: addresses ("10.0.0.1")
// and CIDR ranges ("10.0.0.0/8"), an address being a range of one.
func (c Config) TrustedProxyRanges() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range c.TrustedProxies {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("COUNTERS_TRUSTED_PROXIES: %q is neither an IP address nor a CIDR range", s)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}
