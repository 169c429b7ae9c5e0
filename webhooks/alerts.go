package webhooks

import (
	"context"
	"log/slog"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/internal/foundation/deadline"
)

// Counts is what alerts read of history: the quarter hours its store keeps
// (history.Store: storage.HistoryStore), so that a window's sum is
// history's own count and nothing counts a step twice.
type Counts interface {
	HistoryDays(ctx context.Context, name, prefix string, from, to time.Time) ([]history.UTCDay, error)
}

// LastChanges is what Counts may also tell: when the target last changed
// (an increment, a set or a reset; storage.HistoryStore). A window that
// starts after that holds no step, which quarter hours alone cannot say
// until the window has left the quarter hour of the last step behind: with
// it, silence starts within a check of its window passing, not up to a
// quarter hour later.
type LastChanges interface {
	LastChange(ctx context.Context, name, prefix string) (at time.Time, ok bool, err error)
}

// AlertStore keeps the alerts' state (storage.HookStore).
type AlertStore interface {
	// AlertHooks returns the enabled hooks that have an Alert, with its
	// state as committed.
	AlertHooks(ctx context.Context) ([]Hook, error)
	// MoveAlert records the alert's new state holds, found by the check
	// at at, and its event body, in one transaction, if the hook's state
	// is still the one h carries (its Alert.Seq), no transition was found
	// at at or later, and the hook is enabled; it reports whether it did.
	// A failed move changed nothing, whatever its error.
	MoveAlert(ctx context.Context, h *Hook, holds bool, at time.Time, body []byte) (bool, error)
}

// AlertEvery is how often each process evaluates every alert by default
// (Evaluator.Every): twice a
// minute, so that a transition is recorded within the minute however long
// a pass takes.
const AlertEvery = 30 * time.Second

// Evaluator finds the alerts' transitions and records them: every process
// runs one, and the store's compare-and-set makes each transition one
// event however many evaluate it at once, and however often (a process
// that restarts, or one whose move failed with MySQL, evaluates again and
// finds the state as it was committed).
type Evaluator struct {
	Store  AlertStore
	Counts Counts
	Now    func() time.Time // the store's clock, the one history counts by
	Log    *slog.Logger
	// OnRecord is told after an event was recorded (the relay's Wake).
	OnRecord func()
	// Every is how often Run evaluates; default AlertEvery.
	Every time.Duration
}

// Run evaluates every Every until ctx ends; a pass that fails is
// logged and the next one goes on.
func (e *Evaluator) Run(ctx context.Context) {
	every := e.Every
	if every <= 0 {
		every = AlertEvery
	}
	deadline.Every(ctx, every, func(ctx context.Context) {
		if _, err := e.Pass(ctx); err != nil && ctx.Err() == nil {
			e.log().Warn("webhooks: evaluating the alerts failed; the next pass tries again", "error", err)
		}
	})
}

func (e *Evaluator) log() *slog.Logger {
	if e.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.Log
}

// Pass evaluates every enabled alert once and returns how many events it
// recorded, and the first error (the others are evaluated all the same).
// Each MySQL call has its own deadline.Default.
func (e *Evaluator) Pass(ctx context.Context) (int, error) {
	list, err := withDeadline(ctx, func(ctx context.Context) ([]Hook, error) { return e.Store.AlertHooks(ctx) })
	if err != nil {
		return 0, err
	}
	var first error
	n := 0
	for i := range list {
		moved, err := e.evaluate(ctx, &list[i])
		if err != nil && first == nil {
			first = err
		}
		if moved {
			n++
		}
		if ctx.Err() != nil {
			break
		}
	}
	if n > 0 && e.OnRecord != nil {
		e.OnRecord()
	}
	return n, first
}

// evaluate sums h's window and records its transition, if any.
func (e *Evaluator) evaluate(ctx context.Context, h *Hook) (bool, error) {
	now := e.Now()
	a := h.Alert
	from, full := a.Span(now)
	sum, err := withDeadline(ctx, func(ctx context.Context) (int64, error) { return e.sum(ctx, h, from, now) })
	if err != nil {
		return false, err
	}
	if start := now.Add(-a.Window); sum > 0 && from.Before(start) {
		// The first quarter hour began before the window: its steps may
		// all lie before the window too.
		quiet, err := withDeadline(ctx, func(ctx context.Context) (bool, error) { return e.quietSince(ctx, h, start) })
		if err != nil {
			return false, err
		}
		if quiet {
			sum = 0
		}
	}
	typ := a.Transition(a.HoldsAt(sum, full))
	if typ == "" {
		return false, nil
	}
	return withDeadline(ctx, func(ctx context.Context) (bool, error) {
		return e.Store.MoveAlert(ctx, h, typ == AlertStarted, now, AlertBody(h, typ, sum, from, now))
	})
}

// quietSince says whether h's target has not changed after start, when
// Counts can tell (LastChanges).
func (e *Evaluator) quietSince(ctx context.Context, h *Hook, start time.Time) (bool, error) {
	lc, ok := e.Counts.(LastChanges)
	if !ok {
		return false, nil
	}
	name, under := h.Target, ""
	if h.IsPrefix {
		name, under = "", h.Target
	}
	last, any, err := lc.LastChange(ctx, name, under)
	if err != nil {
		return false, err
	}
	return !any || !last.After(start), nil
}

// sum is the steps of h's target counted in the quarter hours from the one
// that holds from to the one that holds to, less the Baseline when the
// first is the hook's creation's.
func (e *Evaluator) sum(ctx context.Context, h *Hook, from, to time.Time) (int64, error) {
	sum, err := QuarterSum(ctx, e.Counts, h.Target, h.IsPrefix, from, to)
	if err != nil {
		return 0, err
	}
	if from.Equal(h.Alert.Since) {
		sum, _ = counters.Add(sum, -h.Alert.Baseline) // both are sums of the same quarter's steps
	}
	return sum, nil
}

// QuarterSum is the steps of the counter target (or with prefix, of the
// counters under it) counted in the quarter hours from the one that holds
// from to the one that holds to: 0 for a counter that has neither a value
// nor history.
func QuarterSum(ctx context.Context, counts Counts, target string, prefix bool, from, to time.Time) (int64, error) {
	firstDay, firstQ := history.QuarterOf(from)
	lastDay, lastQ := history.QuarterOf(to)
	name, under := target, ""
	if prefix {
		name, under = "", target
	}
	var days []history.UTCDay
	var err error
	if spans, ok := counts.(history.Spanner); ok {
		// Only the first and the last day are cut: the others may come as
		// their totals, which spares unpacking the rolled-up days of a
		// week's window.
		cut := func(day time.Time) bool { return day.Equal(firstDay) || day.Equal(lastDay) }
		days, err = spans.HistorySpans(ctx, name, under, firstDay, lastDay.AddDate(0, 0, 1), cut)
	} else {
		days, err = counts.HistoryDays(ctx, name, under, firstDay, lastDay.AddDate(0, 0, 1))
	}
	if counters.ErrorCode(err) == counters.ENOTFOUND {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var sum int64
	for _, d := range days {
		lo, hi := 0, history.QuartersPerDay-1
		if d.Date.Equal(firstDay) {
			lo = firstQ
		}
		if d.Date.Equal(lastDay) {
			hi = lastQ
		}
		for q := lo; q <= hi; q++ {
			var ok bool
			if sum, ok = counters.Add(sum, d.Quarters[q]); !ok {
				return 0, counters.Errorf(counters.EOUTOFRANGE, "An alert's window sums beyond the signed 64-bit range.")
			}
		}
	}
	return sum, nil
}

// withDeadline runs a MySQL call under its own deadline.Default.
func withDeadline[T any](ctx context.Context, call func(ctx context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, deadline.Default)
	defer cancel()
	return call(ctx)
}
