package wire

import (
	"errors"
	"time"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/visitors"
)

// Visitors is the unique visitors' block: whether page hits count each
// day's unique visitors, and how often a process writes what it counted.
type Visitors struct {
	On    bool          `env:"COUNTERS_VISITORS"`
	Flush time.Duration `env:"COUNTERS_VISITORS_FLUSH"`
}

// Validate checks the unique visitors' settings.
func (v Visitors) Validate() error {
	if v.Flush <= 0 {
		return errors.New("COUNTERS_VISITORS_FLUSH: must be a positive duration such as 5s")
	}
	return nil
}

// defaultVisitors is the unique visitors' block of Defaults: on.
func defaultVisitors(c *Config) { c.Visitors = Visitors{On: true, Flush: visitors.DefaultFlush} }

// buildVisitors: salts and sketches in MySQL, counted in process (see
// visitors/); the salted identifiers also key the page-hit limits, on or
// off.
func buildVisitors(b *builder) (app.Capability, error) {
	store := storage.NewVisitorStore(b.s.DB)
	b.clientKeys = visitors.NewKeys(store, b.now)
	if !b.cfg.Visitors.On {
		return nil, nil
	}
	b.s.Visitors = visitors.New(store, visitors.Options{Keys: b.clientKeys, Now: b.now, Flush: b.cfg.Visitors.Flush, Log: b.log})
	b.job("visitors' flush", b.s.Visitors.Run) // its last flush runs before MySQL closes
	return nil, nil
}
