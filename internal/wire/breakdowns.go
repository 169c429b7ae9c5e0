package wire

import (
	"context"
	"fmt"
	"time"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/storage"
)

// Breakdowns is the breakdowns' block: whether increments count their
// labels, and how many values of a label a counter keeps per day. The
// store counts labels inside each increment's transaction: the core
// registers the capability's tally (labelsTally) when it builds the
// store, and increments' bodies read labels through its field
// (labelsField).
type Breakdowns struct {
	On     bool `env:"COUNTERS_BREAKDOWNS"`
	Values int  `env:"COUNTERS_BREAKDOWN_VALUES"` // storage.Labels' values, decided as labels settle
}

// Validate checks the breakdowns' settings.
func (b Breakdowns) Validate() error {
	if b.Values < breakdowns.DefaultLabelValues {
		return fmt.Errorf("COUNTERS_BREAKDOWN_VALUES: must be at least %d, got %d", breakdowns.DefaultLabelValues, b.Values)
	}
	return nil
}

// defaultBreakdowns is the breakdowns' block of Defaults.
func defaultBreakdowns(c *Config) {
	c.Breakdowns = Breakdowns{On: true, Values: breakdowns.DefaultLabelValues}
}

// breakdownsOn says whether labels are counted: a breakdown's "(none)" is the
// history's total less the labelled steps, so without history
// (COUNTERS_HISTORY=false) there are no breakdowns either.
func (c *Config) breakdownsOn() bool { return c.Breakdowns.On && c.History.On }

// labelsTally is the breakdowns' tally, which the core registers with the
// store before its first write: on or off, it deletes what labels counted
// with their counter and by history's retention; off, it counts nothing.
func (c *Config) labelsTally() storage.Tally {
	return storage.Labels(c.breakdownsOn(), c.Breakdowns.Values)
}

// labelsField is how increments' bodies give their labels: off, checked
// and dropped before the write path, so that a labelled increment is
// queued, grouped and written exactly as an unlabelled one.
func (c *Config) labelsField() app.ExtraField { return app.LabelsField(c.breakdownsOn()) }

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
