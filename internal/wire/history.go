package wire

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/storage"
)

// History is the history's block: whether increments record it at all
// (the store writes it inside each increment: historySwitch sets it on
// the store before its first write), and how long it is kept.
type History struct {
	On bool `env:"COUNTERS_HISTORY"` // storage.CounterStore.History

	// Retention is the age past which history is removed; 0 keeps it all.
	Retention Age `env:"COUNTERS_HISTORY_RETENTION"`
}

// defaultHistory is the history's block of Defaults: on, kept whole.
func defaultHistory(c *Config) { c.History = History{On: true} }

// historySwitch is history's switch of the store's own writes: off, an
// increment is the one statement of its value, with no slot and no
// history tally (COUNTERS_HISTORY=false, for comparisons).
func (c *Config) historySwitch(s *storage.CounterStore) { s.History = c.History.On }

// Validate checks the history's settings.
func (h History) Validate() error {
	if h.Retention != 0 && time.Duration(h.Retention) < 24*time.Hour {
		return errors.New("COUNTERS_HISTORY_RETENTION: must be at least a day (1d or 24h), or 0 to keep all history")
	}
	return nil
}

// Age is a duration that may also be given in days ("400d"), as a
// retention usually is.
type Age time.Duration

// maxAgeDays is the most days an Age holds.
const maxAgeDays = int64(math.MaxInt64 / (24 * time.Hour))

// UnmarshalText reads "400d", a Go duration ("9600h"), or "0".
func (a *Age) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("want a number of days such as 400d, or a duration such as 9600h, got %q", s)
		}
		// Past this many days a time.Duration wraps round, and a retention
		// meant to keep centuries would keep less than a day.
		if n > maxAgeDays {
			return fmt.Errorf("want at most %dd (about 292 years), got %q", maxAgeDays, s)
		}
		*a = Age(time.Duration(n) * 24 * time.Hour)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a number of days such as 400d, or a duration such as 9600h, got %q", s)
	}
	*a = Age(d)
	return nil
}

// retentionEvery is how often retention makes a pass: history goes by
// whole UTC days, so an hour is soon enough.
const retentionEvery = time.Hour

// rollupEvery is how often the roll-up makes a pass: it moves whole UTC
// days once they are over, so an hour is soon enough.
const rollupEvery = time.Hour

// buildHistory: counts per hour, day and month, read from the store's
// history (app/history.go serves them), the roll-up job that keeps past
// days small (always: it changes no answer), and the retention job when
// the operator set one.
func buildHistory(b *builder) (app.Capability, error) {
	store := storage.HistoryOf(b.s.Store) // its retention removes what the tallies kept too
	b.history = history.NewService(store, b.now)
	if b.s.Visitors != nil {
		b.history.Visitors = b.s.Visitors
	}
	// The roll-up takes the store's clock as Build finds it, not through
	// b.now: it starts a pass at once, while tests replace Store.Now after
	// Build (a data race on the field). Only tests replace it.
	rollup := &history.Rollup{Store: store, Now: b.s.Store.Now, Log: b.log}
	b.job("history roll-up", func(ctx context.Context) { rollup.Run(ctx, rollupEvery) })
	if age := time.Duration(b.cfg.History.Retention); age > 0 {
		r := &history.Retention{Store: store, Age: age, Now: b.now, Log: b.log}
		b.job("history retention", func(ctx context.Context) { r.Run(ctx, retentionEvery) })
	}
	return app.History(b.history), nil
}
