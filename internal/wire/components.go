package wire

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/countersvc/countersvc/storage"
)

// HTTP is the server's: the listener, the requests' limits, who the
// clients are, and the shutdown (main.go).
type HTTP struct {
	Addr            string        `env:"COUNTERS_ADDR"`
	TrustedProxies  []string      `env:"COUNTERS_TRUSTED_PROXIES" envSeparator:","` // see TrustedProxyRanges
	BodyLimit       int           `env:"COUNTERS_BODY_LIMIT"`
	ReadTimeout     time.Duration `env:"COUNTERS_READ_TIMEOUT"`
	WriteTimeout    time.Duration `env:"COUNTERS_WRITE_TIMEOUT"`
	IdleTimeout     time.Duration `env:"COUNTERS_IDLE_TIMEOUT"`
	ShutdownDrain   time.Duration `env:"COUNTERS_SHUTDOWN_DRAIN"`
	ShutdownTimeout time.Duration `env:"COUNTERS_SHUTDOWN_TIMEOUT"`
	DebugAddr       string        `env:"COUNTERS_DEBUG_ADDR"` // net/http/pprof; empty: off
}

// Validate checks the server's settings.
func (h HTTP) Validate() error {
	if err := positive(
		setting{"COUNTERS_READ_TIMEOUT", h.ReadTimeout}, setting{"COUNTERS_WRITE_TIMEOUT", h.WriteTimeout},
		setting{"COUNTERS_IDLE_TIMEOUT", h.IdleTimeout}, setting{"COUNTERS_SHUTDOWN_TIMEOUT", h.ShutdownTimeout},
	); err != nil {
		return err
	}
	if h.ShutdownDrain < 0 {
		return errors.New("COUNTERS_SHUTDOWN_DRAIN: must be 0 or a positive duration such as 5s")
	}
	if h.BodyLimit < 1024 {
		return errors.New("COUNTERS_BODY_LIMIT: must be at least 1024 bytes")
	}
	_, err := h.TrustedProxyRanges()
	return err
}

// TrustedProxyRanges parses COUNTERS_TRUSTED_PROXIES: addresses ("10.0.0.1")
// and CIDR ranges ("10.0.0.0/8"), an address being a range of one.
func (h HTTP) TrustedProxyRanges() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range h.TrustedProxies {
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

// MySQL is the store of record's.
type MySQL struct {
	DSN          string        `env:"COUNTERS_MYSQL_DSN"`
	MaxOpenConns int           `env:"COUNTERS_MYSQL_MAX_CONNS"`
	Timeout      time.Duration `env:"COUNTERS_MYSQL_TIMEOUT"` // of each request's MySQL work, the keys' and live updates' too
	ConnectWait  time.Duration `env:"COUNTERS_MYSQL_WAIT"`
}

// Validate checks the MySQL settings.
func (m MySQL) Validate() error {
	if _, err := storage.ParseDSN(m.DSN); err != nil {
		return fmt.Errorf("COUNTERS_MYSQL_DSN: %v", errors.Unwrap(err))
	}
	if m.MaxOpenConns < 1 {
		return errors.New("COUNTERS_MYSQL_MAX_CONNS: must be at least 1")
	}
	return positive(setting{"COUNTERS_MYSQL_TIMEOUT", m.Timeout}, setting{"COUNTERS_MYSQL_WAIT", m.ConnectWait})
}

// Cache is the Redis read cache's; no RedisURL, no cache.
type Cache struct {
	RedisURL  string        `env:"COUNTERS_REDIS_URL"`
	Timeout   time.Duration `env:"COUNTERS_REDIS_TIMEOUT"`
	Lease     time.Duration `env:"COUNTERS_CACHE_LEASE"`
	ClockSkew time.Duration `env:"COUNTERS_CACHE_CLOCK_SKEW"`
	ListTTL   time.Duration `env:"COUNTERS_LIST_TTL"` // how long lists may lag, also their Cache-Control, with or without Redis; 0: none
}

// Validate checks the cache's settings.
func (c Cache) Validate() error {
	if c.RedisURL != "" {
		u, err := url.Parse(c.RedisURL)
		if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "redis-sentinel" && u.Scheme != "unix") {
			return fmt.Errorf("COUNTERS_REDIS_URL: want redis://host:port/db, got %q", c.RedisURL)
		}
	}
	if c.ClockSkew < 0 {
		return errors.New("COUNTERS_CACHE_CLOCK_SKEW: must be 0 or a positive duration such as 50ms")
	}
	if c.ListTTL < 0 {
		return errors.New("COUNTERS_LIST_TTL: must be 0 (lists show every answered write) or a positive duration such as 1s")
	}
	return positive(setting{"COUNTERS_REDIS_TIMEOUT", c.Timeout}, setting{"COUNTERS_CACHE_LEASE", c.Lease})
}

// Coalesce is the coalescer's; On false leaves it out.
type Coalesce struct {
	On          bool `env:"COUNTERS_COALESCE"`
	MaxRound    int  `env:"COUNTERS_COALESCE_MAX_ROUND"`
	MaxInFlight int  `env:"COUNTERS_COALESCE_MAX_INFLIGHT"` // at most MySQL.MaxOpenConns: Config.Validate
}

// Validate checks the coalescer's settings.
func (c Coalesce) Validate() error {
	if c.MaxRound < 1 || c.MaxInFlight < 1 {
		return errors.New("COUNTERS_COALESCE_MAX_ROUND and COUNTERS_COALESCE_MAX_INFLIGHT: must be at least 1")
	}
	return nil
}

// Keys is the API keys'. Any admin token will do, none included (then only
// loopback clients and API keys reach the private API): nothing to check.
type Keys struct {
	AdminToken string `env:"COUNTERS_API_TOKEN"`
}

// Log is the logger's.
type Log struct {
	Level  string `env:"COUNTERS_LOG_LEVEL"`  // see SlogLevel
	Format string `env:"COUNTERS_LOG_FORMAT"` // json or text
}

// Validate checks the logger's settings.
func (l Log) Validate() error {
	if _, err := l.SlogLevel(); err != nil {
		return err
	}
	if l.Format != "json" && l.Format != "text" {
		return fmt.Errorf("COUNTERS_LOG_FORMAT: want json or text, got %q", l.Format)
	}
	return nil
}

// SlogLevel parses COUNTERS_LOG_LEVEL.
func (l Log) SlogLevel() (slog.Level, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.Level)); err != nil {
		return level, fmt.Errorf("COUNTERS_LOG_LEVEL: want debug, info, warn or error, got %q", l.Level)
	}
	return level, nil
}

// setting is a duration and the variable it came from.
type setting struct {
	name string
	d    time.Duration
}

// positive checks durations that must be above 0.
func positive(settings ...setting) error {
	for _, s := range settings {
		if s.d <= 0 {
			return fmt.Errorf("%s: must be a positive duration such as 500ms or 3s", s.name)
		}
	}
	return nil
}
