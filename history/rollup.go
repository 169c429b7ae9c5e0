package history

import (
	"context"
	"log/slog"
	"time"
)

// Boundaries are the quarter hours of a UTC day (0 to QuartersPerDay-1) at
// which some IANA zone's local midnight fell or falls between 1970 and
// 2037, in order: 24 whole hours and 23 others (+5:30 is 18:30 UTC, quarter
// 74; +5:45 is 18:15 UTC, 73; Chatham's +13:45 is 10:15 UTC, 41; Lord
// Howe's +10:30 and +11 ...). Days and months of any zone start on them,
// so the sums of a day's quarter hours between consecutive boundaries are
// all that those steps ever need of an old day: 47 figures instead of 96.
// TestEveryZonesMidnightFallsOnABoundary derives the set from Go's tz
// database and fails when a zone needs a quarter not listed (Monrovia's
// -0:44:30 until 1972 and Kiritimati's -10:40 until 1979 fall on no
// quarter hour at all: history's grain cannot split them anyway). The list
// is part of the stored format: a boundary may be added only with a
// roll-up format of its own, since old days keep the sums between these.
var Boundaries = []int{
	0, 4, 6, 8, 10, 12, 14, 15, 16, 18, 20, 24, 28, 32, 34, 36, 38, 40, 41, 42, 44, 45, 46, 48,
	50, 52, 54, 56, 57, 58, 60, 61, 62, 64, 66, 68, 70, 72, 73, 74, 76, 78, 80, 82, 84, 88, 92,
}

// Roller is what the roll-up needs of persistence. Each batch is one
// transaction, so that no answer changes, whatever stops it.
type Roller interface {
	// RollupDays moves at most limit counters' days before before, the
	// first ones after the position after in the order of name and day,
	// from their quarter hours into the packed form: all quarter hours
	// for the days from thin on, the sums between Boundaries for older
	// ones. It returns how many days it looked at, fewer than limit when
	// none is left, and the position of the last.
	RollupDays(ctx context.Context, before, thin time.Time, after RollupPosition, limit int) (int64, RollupPosition, error)
	// ThinDays turns at most limit months that keep days before thin in
	// quarter hours into the sums between Boundaries, and returns how many
	// it turned: fewer than limit when none is left.
	ThinDays(ctx context.Context, thin time.Time, limit int) (int64, error)
}

// RollupPosition is where a roll-up pass got to: a counter's day.
type RollupPosition struct {
	Name string
	Day  time.Time
}

// DetailAge is how long a day keeps all its quarter hours: hour steps
// are promised 35 days back, from any zone (up to 14 hours from UTC), and
// two days more cover the UTC days those hours fall in.
const DetailAge = 37 * 24 * time.Hour

// Rollup rolls history up in the background: the days before today (UTC)
// leave counter_history's 96 columns for a packed form in a row per
// counter and month, keeping every quarter hour for DetailAge and then
// only what days and months of every zone need (Boundaries). Like
// Retention it works in small batches, resting after each so that a pass
// takes at most Share of the database's time and never slows increments,
// whose own writes it never touches (the slot and today's row stay).
type Rollup struct {
	Store Roller
	Now   func() time.Time
	Log   *slog.Logger
	// Batch is how many days one transaction moves. Default 500.
	Batch int
	// Share and Pause as Retention's. Defaults 0.1 and 10 ms.
	Share float64
	Pause time.Duration
	// Timeout bounds each batch. Default 10 s.
	Timeout time.Duration
}

// Pass rolls up, batch by batch, every day before today, then thins the
// days that have grown older than DetailAge, until none is left or ctx
// ends; it returns how many days it moved and months it thinned.
func (r *Rollup) Pass(ctx context.Context) (int64, error) {
	now := r.Now()
	today, _ := QuarterOf(now)
	thin, _ := QuarterOf(now.Add(-DetailAge))
	var at RollupPosition
	moved, err := batches(ctx, r.Batch, r.Share, r.Pause, r.Timeout, func(ctx context.Context, limit int) (int64, error) {
		n, next, err := r.Store.RollupDays(ctx, today, thin, at, limit)
		at = next
		return n, err
	})
	if err != nil {
		return moved, err
	}
	thinned, err := batches(ctx, r.Batch, r.Share, r.Pause, r.Timeout, func(ctx context.Context, limit int) (int64, error) {
		return r.Store.ThinDays(ctx, thin, limit)
	})
	return moved + thinned, err
}

// rollupFirst is how long Run waits before its first pass.
const rollupFirst = 5 * time.Minute

// Run makes a pass five minutes after it starts (a process starting does no
// background work beside its start, and processes started together do not
// roll up together), then every interval until ctx ends, logging what each
// did and any failure (the next pass goes on).
func (r *Rollup) Run(ctx context.Context, every time.Duration) {
	runEvery(ctx, rollupFirst, every, r.Pass, func(n int64, err error) {
		switch {
		case err != nil && ctx.Err() == nil:
			r.Log.Warn("history roll-up: a pass failed; the next one goes on", "rolled", n, "error", err.Error())
		case n > 0:
			r.Log.Info("history roll-up: rolled up past days", "rolled", n)
		}
	})
}
