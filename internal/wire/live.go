package wire

import (
	"errors"
	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/live"
	"github.com/countersvc/countersvc/storage"
	"time"
)

// Live is the live updates'.
type Live struct {
	MaxPerAddr int           `env:"COUNTERS_LIVE_MAX_PER_ADDR"`
	MaxStreams int           `env:"COUNTERS_LIVE_MAX_STREAMS"`
	CheckEvery time.Duration `env:"COUNTERS_LIVE_CHECK_EVERY"`
	Heartbeat  time.Duration `env:"COUNTERS_LIVE_HEARTBEAT"` // app's: the streams' comment
}

// Validate checks the live updates' settings.
func (l Live) Validate() error {
	if l.MaxPerAddr < 1 || l.MaxStreams < 1 {
		return errors.New("COUNTERS_LIVE_MAX_PER_ADDR and COUNTERS_LIVE_MAX_STREAMS: must be at least 1")
	}
	if err := positive(setting{"COUNTERS_LIVE_CHECK_EVERY", l.CheckEvery}, setting{"COUNTERS_LIVE_HEARTBEAT", l.Heartbeat}); err != nil {
		return err
	}
	if l.Heartbeat > 15*time.Second {
		return errors.New("COUNTERS_LIVE_HEARTBEAT: must be at most 15s (the contract promises a comment at least every 15 seconds)")
	}
	return nil
}

// defaultLive is the live updates' block of Defaults.
func defaultLive(c *Config) {
	c.Live = Live{
		MaxPerAddr: live.DefaultMaxPerAddr,
		MaxStreams: live.DefaultMaxStreams,
		CheckEvery: live.DefaultCheckEvery,
		Heartbeat:  app.DefaultHeartbeat,
	}
}

// buildLive: one observer of the store's change seam. It reads watched
// counters from the MySQL store itself (never a cache: a stream must not
// go back) and hears other processes over Redis.
func buildLive(b *builder) (app.Capability, error) {
	cfg := b.cfg.Live
	o := live.Options{Reader: storage.NewLiveStore(b.s.DB), CheckEvery: cfg.CheckEvery, MaxPerAddr: cfg.MaxPerAddr, MaxStreams: cfg.MaxStreams,
		Timeout: b.cfg.MySQL.Timeout, Registerer: b.s.Registry, Log: b.log}
	if b.s.Cache != nil {
		o.Transport = b.s.Cache.Live()
	}
	b.s.Live = live.New(o)
	b.s.Store.Observe(b.s.Live)
	b.job("live hub", b.s.Live.Run)
	b.s.onClose(func() error { b.s.Live.Close(); return nil })
	return app.Live(b.s.Live, cfg.Heartbeat), nil
}
