// Package config reads the service's configuration from the environment.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/caarlos0/env/v10"
	"github.com/go-sql-driver/mysql"
)

// Config is every setting of the service. Its defaults are Defaults().
type Config struct {
	Addr            string        `env:"COUNTERS_ADDR"`
	MySQLDSN        string        `env:"COUNTERS_MYSQL_DSN"`
	MySQLMaxConns   int           `env:"COUNTERS_MYSQL_MAX_CONNS"`
	MySQLTimeout    time.Duration `env:"COUNTERS_MYSQL_TIMEOUT"`
	MySQLWaitAtBoot time.Duration `env:"COUNTERS_MYSQL_WAIT"`
	Coalesce        bool          `env:"COUNTERS_COALESCE"`
	CoalesceRound   int           `env:"COUNTERS_COALESCE_MAX_ROUND"`
	CoalesceFlight  int           `env:"COUNTERS_COALESCE_MAX_INFLIGHT"`
	History         bool          `env:"COUNTERS_HISTORY"`
	RedisURL        string        `env:"COUNTERS_REDIS_URL"`
	RedisTimeout    time.Duration `env:"COUNTERS_REDIS_TIMEOUT"`
	CacheLease      time.Duration `env:"COUNTERS_CACHE_LEASE"`
	CacheClockSkew  time.Duration `env:"COUNTERS_CACHE_CLOCK_SKEW"`
	ListTTL         time.Duration `env:"COUNTERS_LIST_TTL"`
	APIToken        string        `env:"COUNTERS_API_TOKEN"`
	BodyLimit       int           `env:"COUNTERS_BODY_LIMIT"`
	ReadTimeout     time.Duration `env:"COUNTERS_READ_TIMEOUT"`
	WriteTimeout    time.Duration `env:"COUNTERS_WRITE_TIMEOUT"`
	IdleTimeout     time.Duration `env:"COUNTERS_IDLE_TIMEOUT"`
	ShutdownDrain   time.Duration `env:"COUNTERS_SHUTDOWN_DRAIN"`
	ShutdownTimeout time.Duration `env:"COUNTERS_SHUTDOWN_TIMEOUT"`
	DebugAddr       string        `env:"COUNTERS_DEBUG_ADDR"` // net/http/pprof; empty: off
	LogLevel        string        `env:"COUNTERS_LOG_LEVEL"`
	LogFormat       string        `env:"COUNTERS_LOG_FORMAT"`

	// Live updates (docs/live-updates.md).
	LiveMaxPerAddr int           `env:"COUNTERS_LIVE_MAX_PER_ADDR"`
	LiveMaxStreams int           `env:"COUNTERS_LIVE_MAX_STREAMS"`
	LiveCheckEvery time.Duration `env:"COUNTERS_LIVE_CHECK_EVERY"`
	LiveHeartbeat  time.Duration `env:"COUNTERS_LIVE_HEARTBEAT"`

	// Page hits (hits.go).
	PublicPrefixes  []string      `env:"COUNTERS_PUBLIC_PREFIXES" envSeparator:","`
	TrustedProxies  []string      `env:"COUNTERS_TRUSTED_PROXIES" envSeparator:","`
	HitsRateLimit   int           `env:"COUNTERS_HITS_RATE_LIMIT"`
	HitsRateWindow  time.Duration `env:"COUNTERS_HITS_RATE_WINDOW"`
	HitsDedupWindow time.Duration `env:"COUNTERS_HITS_DEDUP_WINDOW"`
	ImageProxies    []string      `env:"COUNTERS_IMAGE_PROXIES" envSeparator:","`
	ImageProxyRate  int           `env:"COUNTERS_IMAGE_PROXY_RATE_LIMIT"`
	Visitors        bool          `env:"COUNTERS_VISITORS"`
	VisitorsFlush   time.Duration `env:"COUNTERS_VISITORS_FLUSH"`

	// Webhooks (webhooks/).
	WebhookAllowPrivate bool `env:"COUNTERS_WEBHOOK_ALLOW_PRIVATE"`
	WebhookMaxPerKey    int  `env:"COUNTERS_WEBHOOK_MAX_PER_KEY"`
	WebhookWorkers      int  `env:"COUNTERS_WEBHOOK_WORKERS"`
}

// Load reads the environment and validates the result. The error is one line
// that names the variable at fault.
func Load() (Config, error) {
	c := Defaults()
	for old, name := range renamed {
		if _, set := os.LookupEnv(old); set {
			return c, fmt.Errorf("%s: renamed %s; set that instead", old, name)
		}
	}
	if err := env.Parse(&c); err != nil {
		return c, oneLine(err)
	}
	return c, c.Validate()
}

// renamed are settings whose name changed, so that one word names one
// concept: an old name still set is refused rather than silently ignored.
var renamed = map[string]string{
	"COUNTERS_LIST_CACHE_TTL":     "COUNTERS_LIST_TTL",
	"COUNTERS_COALESCE_MAX_BATCH": "COUNTERS_COALESCE_MAX_ROUND",
	// An entry's lifetime became a lease: the longest a write waits when
	// Redis cannot confirm its invalidation. A 60s TTL kept as a lease would
	// make such writes wait a minute.
	"COUNTERS_CACHE_TTL": "COUNTERS_CACHE_LEASE",
}

// Validate checks values that parse but make no sense.
func (c Config) Validate() error {
	if _, err := mysql.ParseDSN(c.MySQLDSN); err != nil {
		return fmt.Errorf("COUNTERS_MYSQL_DSN: %v", err)
	}
	if c.RedisURL != "" {
		u, err := url.Parse(c.RedisURL)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "redis-sentinel" && u.Scheme != "unix") {
			return fmt.Errorf("COUNTERS_REDIS_URL: want redis://host:port/db, got %q", c.RedisURL)
		}
	}
	positive := []struct {
		name string
		d    time.Duration
	}{
		{"COUNTERS_MYSQL_TIMEOUT", c.MySQLTimeout}, {"COUNTERS_REDIS_TIMEOUT", c.RedisTimeout},
		{"COUNTERS_CACHE_LEASE", c.CacheLease}, {"COUNTERS_LIST_TTL", c.ListTTL},
		{"COUNTERS_SHUTDOWN_TIMEOUT", c.ShutdownTimeout}, {"COUNTERS_MYSQL_WAIT", c.MySQLWaitAtBoot},
		{"COUNTERS_READ_TIMEOUT", c.ReadTimeout}, {"COUNTERS_WRITE_TIMEOUT", c.WriteTimeout},
		{"COUNTERS_IDLE_TIMEOUT", c.IdleTimeout},
		{"COUNTERS_LIVE_CHECK_EVERY", c.LiveCheckEvery}, {"COUNTERS_LIVE_HEARTBEAT", c.LiveHeartbeat},
	}
	for _, p := range positive {
		if p.d <= 0 {
			return fmt.Errorf("%s: must be a positive duration such as 500ms or 3s", p.name)
		}
	}
	if c.CacheClockSkew < 0 {
		return errors.New("COUNTERS_CACHE_CLOCK_SKEW: must be 0 or a positive duration such as 50ms")
	}
	if c.ShutdownDrain < 0 {
		return errors.New("COUNTERS_SHUTDOWN_DRAIN: must be 0 or a positive duration such as 5s")
	}
	if c.MySQLMaxConns < 1 {
		return errors.New("COUNTERS_MYSQL_MAX_CONNS: must be at least 1")
	}
	if c.CoalesceRound < 1 || c.CoalesceFlight < 1 {
		return errors.New("COUNTERS_COALESCE_MAX_ROUND and COUNTERS_COALESCE_MAX_INFLIGHT: must be at least 1")
	}
	if c.CoalesceFlight > c.MySQLMaxConns {
		return errors.New("COUNTERS_COALESCE_MAX_INFLIGHT: must not exceed COUNTERS_MYSQL_MAX_CONNS")
	}
	if c.WebhookMaxPerKey < 1 || c.WebhookWorkers < 1 {
		return errors.New("COUNTERS_WEBHOOK_MAX_PER_KEY and COUNTERS_WEBHOOK_WORKERS: must be at least 1")
	}
	if c.LiveMaxPerAddr < 1 || c.LiveMaxStreams < 1 {
		return errors.New("COUNTERS_LIVE_MAX_PER_ADDR and COUNTERS_LIVE_MAX_STREAMS: must be at least 1")
	}
	if c.LiveHeartbeat > 15*time.Second {
		return errors.New("COUNTERS_LIVE_HEARTBEAT: must be at most 15s (the contract promises a comment at least every 15 seconds)")
	}
	if c.BodyLimit < 1024 {
		return errors.New("COUNTERS_BODY_LIMIT: must be at least 1024 bytes")
	}
	if _, err := c.SlogLevel(); err != nil {
		return err
	}
	if err := c.validateHits(); err != nil {
		return err
	}
	if c.LogFormat != "json" && c.LogFormat != "text" {
		return fmt.Errorf("COUNTERS_LOG_FORMAT: want json or text, got %q", c.LogFormat)
	}
	return nil
}

// SlogLevel parses COUNTERS_LOG_LEVEL.
func (c Config) SlogLevel() (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return l, fmt.Errorf("COUNTERS_LOG_LEVEL: want debug, info, warn or error, got %q", c.LogLevel)
	}
	return l, nil
}

// oneLine rewrites env's errors to name the variable, not the Go field:
// "COUNTERS_MYSQL_TIMEOUT: time: invalid duration "soon"".
func oneLine(err error) error {
	var agg env.AggregateError
	if !errors.As(err, &agg) {
		return errors.New(strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	var parts []string
	for _, e := range agg.Errors {
		var pe env.ParseError
		if errors.As(e, &pe) {
			parts = append(parts, fmt.Sprintf("%s: %v", envName(pe.Name), pe.Err))
		} else {
			parts = append(parts, e.Error())
		}
	}
	return errors.New(strings.ReplaceAll(strings.Join(parts, "; "), "\n", "; "))
}

func envName(field string) string {
	if f, ok := reflect.TypeOf(Config{}).FieldByName(field); ok {
		return strings.Split(f.Tag.Get("env"), ",")[0]
	}
	return field
}
