package wire

import (
	"context"
	"fmt"
	"time"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/storage"
)

// Breakdowns is the breakdowns' block: whether increments count their
// labels, and how many values of a label a counter keeps per day. The
// store counts labels inside each increment's transaction, so the core
// reads this block when it builds the store (labels).
type Breakdowns struct {
	On     bool `env:"COUNTERS_BREAKDOWNS"`
	Values int  `env:"COUNTERS_BREAKDOWN_VALUES"` // storage.CounterStore.LabelValues, decided as labels settle
}

// Validate checks the breakdowns' settings.
func (b Breakdowns) Validate() error {
	if b.Values < counters.DefaultLabelValues {
		return fmt.Errorf("COUNTERS_BREAKDOWN_VALUES: must be at least %d, got %d", counters.DefaultLabelValues, b.Values)
	}
	return nil
}

// defaultBreakdowns is the breakdowns' block of Defaults.
func defaultBreakdowns(c *Config) {
	c.Breakdowns = Breakdowns{On: true, Values: counters.DefaultLabelValues}
}

// breakdownsOn says whether labels are counted: a breakdown's "(none)" is the
// history's total less the labelled steps, so without history
// (COUNTERS_HISTORY=false) there are no breakdowns either.
func (c *Config) breakdownsOn() bool { return c.Breakdowns.On && c.MySQL.History }

// labels makes the store count labels (or not) and tells the backend, so
// that the counters service drops labels when breakdowns are off: then
// a labelled increment is exactly an unlabelled one.
func (c *Config) labels(store *storage.CounterStore, backend *counters.Backend) {
	on := c.breakdownsOn()
	store.Labels, store.LabelValues = on, c.Breakdowns.Values
	backend.Labels = on
}

// settleEvery is how often a process settles pending labels. Reads settle
// what is pending themselves, so this bounds what they have to, not what
// they answer.
const settleEvery = time.Second

// buildBreakdowns: reads of what labelled increments counted, beside
// their history (app/breakdowns.go serves them), and the job that settles
// pending labels; nothing when off.
func buildBreakdowns(b *builder) (app.Capability, error) {
	if !b.cfg.breakdownsOn() {
		return nil, nil
	}
	store := storage.BreakdownsOf(b.s.Store)
	settling := &breakdowns.Settling{Store: store, Now: b.now, Log: b.log}
	b.job("breakdowns settling", func(ctx context.Context) { settling.Run(ctx, settleEvery) })
	return app.Breakdowns(breakdowns.NewService(store, b.now)), nil
}
