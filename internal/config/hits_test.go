package config_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/config"
)

func TestHitSettingsAreReadAndChecked(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string // substring; "" for success
		check   func(t *testing.T, c config.Config)
	}{
		{"defaults", nil, "", func(t *testing.T, c config.Config) {
			if !slices.Equal(c.Hits.PublicPrefixes, []string{"hits/"}) || c.Hits.Limits.Rate != 60 ||
				c.Hits.Limits.RateWindow != time.Minute || c.Hits.Limits.DedupWindow != 30*time.Second || len(c.HTTP.TrustedProxies) != 0 {
				t.Errorf("defaults: %+v", c)
			}
		}},
		{"several prefixes", map[string]string{"COUNTERS_PUBLIC_PREFIXES": "hits/,pub/"}, "", func(t *testing.T, c config.Config) {
			if !slices.Equal(c.Hits.PublicPrefixes, []string{"hits/", "pub/"}) {
				t.Errorf("prefixes %q", c.Hits.PublicPrefixes)
			}
		}},
		{"limits off", map[string]string{"COUNTERS_HITS_RATE_LIMIT": "0", "COUNTERS_HITS_DEDUP_WINDOW": "0s"}, "", nil},
		{"proxies", map[string]string{"COUNTERS_TRUSTED_PROXIES": "10.0.0.0/8, 192.168.1.7,::1"}, "", func(t *testing.T, c config.Config) {
			got, err := c.HTTP.TrustedProxyRanges()
			want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.168.1.7/32"), netip.MustParsePrefix("::1/128")}
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("ranges %v, %v; want %v", got, err, want)
			}
		}},
		{"empty prefix opens everything", map[string]string{"COUNTERS_PUBLIC_PREFIXES": "hits/,"}, "COUNTERS_PUBLIC_PREFIXES", nil},
		{"reserved prefix", map[string]string{"COUNTERS_PUBLIC_PREFIXES": "_tickets/"}, "reserved", nil},
		{"bad proxy", map[string]string{"COUNTERS_TRUSTED_PROXIES": "proxy.local"}, "COUNTERS_TRUSTED_PROXIES", nil},
		{"negative rate", map[string]string{"COUNTERS_HITS_RATE_LIMIT": "-1"}, "COUNTERS_HITS_RATE_LIMIT", nil},
		{"no rate window", map[string]string{"COUNTERS_HITS_RATE_WINDOW": "0s"}, "COUNTERS_HITS_RATE_WINDOW", nil},
		{"negative dedup", map[string]string{"COUNTERS_HITS_DEDUP_WINDOW": "-1s"}, "COUNTERS_HITS_DEDUP_WINDOW", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			c, err := config.Load()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if tc.check != nil {
					tc.check(t, c)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}
