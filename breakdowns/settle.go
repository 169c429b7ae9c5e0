package breakdowns

import (
	"context"
	"log/slog"
	"time"

	"github.com/countersvc/countersvc/internal/foundation/deadline"
)

// Settler settles pending labels: an increment's transaction writes its
// labels as one packed row per counter and day, and a settling pass turns
// those rows into the counts per value, deciding the bound on values in
// the order the counter's writes committed. Reads settle what is still
// pending the same way, so passes change no answer: they keep reads short.
type Settler interface {
	// Settle settles at most limit pending rows, the oldest of each
	// counter first, and returns how many.
	Settle(ctx context.Context, limit int) (int, error)
	// RollupLabels moves at most limit days' counts of a value, of days
	// before before, into their month's row, and returns how many.
	RollupLabels(ctx context.Context, before time.Time, limit int) (int, error)
}

// Settling runs settling passes in the background; each then rolls up
// the days that no write lands in any more: those before yesterday (UTC),
// since a round that queued before midnight may commit after it.
type Settling struct {
	Store Settler
	Now   func() time.Time
	Log   *slog.Logger
	// Batch is how many rows one transaction settles. Default 2,000.
	Batch int
	// Timeout bounds each batch. Default 10 s.
	Timeout time.Duration
	// MaxPause is the longest pause between passes (Run) while they find
	// nothing to do. Default 16 intervals.
	MaxPause time.Duration
}

// Defaults of Settling.
const (
	DefaultSettleBatch   = 2000
	DefaultSettleTimeout = 10 * time.Second
)

// Pass settles batch after batch until one finds fewer rows than Batch
// (what is left was written meanwhile), then rolls up alike, or until ctx
// ends, and returns how many rows it settled and rolled up.
func (s *Settling) Pass(ctx context.Context) (int, error) {
	settled, err := s.batches(ctx, s.Store.Settle)
	if err != nil {
		return settled, err
	}
	today := s.Now().UTC().Truncate(24 * time.Hour)
	rolled, err := s.batches(ctx, func(ctx context.Context, limit int) (int, error) {
		return s.Store.RollupLabels(ctx, today.AddDate(0, 0, -1), limit)
	})
	return settled + rolled, err
}

// batches runs step batch after batch until one does less than Batch.
func (s *Settling) batches(ctx context.Context, step func(ctx context.Context, limit int) (int, error)) (int, error) {
	batch, timeout := s.Batch, s.Timeout
	if batch <= 0 {
		batch = DefaultSettleBatch
	}
	if timeout <= 0 {
		timeout = DefaultSettleTimeout
	}
	total := 0
	for ctx.Err() == nil {
		bctx, cancel := context.WithTimeout(ctx, timeout)
		n, err := step(bctx, batch)
		cancel()
		if total += n; err != nil || n < batch {
			return total, err
		}
	}
	return total, ctx.Err()
}

// Run makes a pass every interval until ctx ends, each within the
// interval (what a pass leaves, the next one takes). A failed pass is
// logged and the next one goes on: rows wait, answers do not change.
// While passes find nothing to settle or roll up, the pause between them
// doubles, up to MaxPause, and the first pass that finds something brings
// it back to one interval: an idle pass is three transactions, and an
// idle process made three a second. Reads settle what is pending
// themselves, so a longer pause changes no answer, only what a read has
// to settle meanwhile.
func (s *Settling) Run(ctx context.Context, every time.Duration) {
	most := s.MaxPause
	if most < every {
		most = 16 * every
	}
	deadline.EveryOrLess(ctx, every, most, func(ctx context.Context) bool {
		n, err := s.Pass(ctx)
		if err != nil && ctx.Err() == nil {
			s.Log.Warn("breakdowns: a settling pass failed; the next one goes on", "settled", n, "error", err.Error())
		}
		return n > 0 || err != nil
	})
}
