package history

import (
	"context"
	"log/slog"
	"time"
)

// Purger is what retention needs of persistence.
type Purger interface {
	// PurgeHistory deletes at most limit stored pieces of history (a
	// counter's day of quarter hours, a day's visitor sketch, an idle
	// counter's slot) of the UTC days before before, and returns how many
	// it deleted: fewer than limit means none is left.
	PurgeHistory(ctx context.Context, before time.Time, limit int) (int64, error)
}

// Retention removes history older than Age, if the operator wants it
// (COUNTERS_HISTORY_RETENTION): whole UTC days, in small batches with a
// rest after each that keeps the pass to a tenth of the database's time,
// so that a pass over a year of history never holds locks or the disk
// long enough to slow increments. A counter's value is
// never touched, and a range that reaches back past the horizon answers 0
// there.
type Retention struct {
	Store Purger
	Age   time.Duration // history older than this goes; at least a day
	Now   func() time.Time
	Log   *slog.Logger
	// Batch is how many pieces one statement deletes. Default 500.
	Batch int
	// Share is the most of its time a pass spends in statements: after
	// each, it rests until the statement's time is that share of the
	// whole, and at least Pause. Deleting takes the database's CPU and
	// log writes that increments need, so a pass must leave it nearly
	// all of them. Defaults 0.1 and 10 ms.
	Share float64
	Pause time.Duration
	// Timeout bounds each statement. Default 10 s.
	Timeout time.Duration
}

// Horizon is the first UTC day Retention keeps at now.
func (r *Retention) Horizon(now time.Time) time.Time {
	day, _ := QuarterOf(now.Add(-r.Age))
	return day
}

// Pass deletes, batch by batch, the history of the days before the
// horizon, until none is left or ctx ends; it returns how much it deleted.
func (r *Retention) Pass(ctx context.Context) (int64, error) {
	before := r.Horizon(r.Now())
	return batches(ctx, r.Batch, r.Share, r.Pause, r.Timeout, func(ctx context.Context, limit int) (int64, error) {
		return r.Store.PurgeHistory(ctx, before, limit)
	})
}

// Run makes a pass at once and then every interval until ctx ends,
// logging what each removed and any failure (the next pass goes on).
func (r *Retention) Run(ctx context.Context, every time.Duration) {
	runEvery(ctx, 0, every, r.Pass, func(n int64, err error) {
		switch {
		case err != nil && ctx.Err() == nil:
			r.Log.Warn("history retention: a pass failed; the next one goes on", "removed", n, "error", err.Error())
		case n > 0:
			r.Log.Info("history retention: removed history older than the horizon", "removed", n, "horizon", r.Horizon(r.Now()).Format(time.DateOnly))
		}
	})
}

// batches calls step with limit batch, each call bounded by timeout, until
// it does less than batch or fails or ctx ends, resting after each so that
// the calls take at most share of the time (and at least pause): the
// background passes of history (retention, roll-up) take the database's
// CPU and log writes that increments need, so they must leave it nearly
// all of them. Zero values take the defaults: 500, 0.1, 10 ms, 10 s.
func batches(ctx context.Context, batch int, share float64, pause, timeout time.Duration, step func(ctx context.Context, limit int) (int64, error)) (int64, error) {
	if batch <= 0 {
		batch = 500
	}
	if share <= 0 || share > 1 {
		share = 0.1
	}
	if pause <= 0 {
		pause = 10 * time.Millisecond
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	var total int64
	for {
		start := time.Now()
		sctx, cancel := context.WithTimeout(ctx, timeout)
		n, err := step(sctx, batch)
		cancel()
		total += n
		if err != nil || n < int64(batch) {
			return total, err
		}
		rest := max(pause, time.Duration(float64(time.Since(start))*(1/share-1)))
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(rest):
		}
	}
}

// runEvery makes a pass after first and then every interval until ctx
// ends, handing each pass's outcome to report.
func runEvery(ctx context.Context, first, every time.Duration, pass func(context.Context) (int64, error), report func(int64, error)) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(first):
	}
	for {
		n, err := pass(ctx)
		report(n, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}
