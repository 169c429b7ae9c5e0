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
}

// Settling runs settling passes in the background.
type Settling struct {
	Store Settler
	Log   *slog.Logger
	// Batch is how many rows one transaction settles. Default 2,000.
	Batch int
	// Timeout bounds each batch. Default 10 s.
	Timeout time.Duration
}

// Defaults of Settling.
const (
	DefaultSettleBatch   = 2000
	DefaultSettleTimeout = 10 * time.Second
)

// Pass settles batch after batch until one finds fewer rows than Batch
// (what is left was written meanwhile) or ctx ends, and returns how many
// rows it settled.
func (s *Settling) Pass(ctx context.Context) (int, error) {
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
		n, err := s.Store.Settle(bctx, batch)
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
func (s *Settling) Run(ctx context.Context, every time.Duration) {
	deadline.Every(ctx, every, func(ctx context.Context) {
		if n, err := s.Pass(ctx); err != nil && ctx.Err() == nil {
			s.Log.Warn("breakdowns: a settling pass failed; the next one goes on", "settled", n, "error", err.Error())
		}
	})
}
