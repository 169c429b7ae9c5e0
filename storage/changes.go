package storage

import (
	"context"
	"database/sql"
	"math"
	"slices"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// The store's side of the change seam (see counters/change.go). Every write
// path of CounterStore ends in the functions of this file: record, inside
// the transaction, once the changed rows are written and locked, and
// committed, after the commit. Those paths are the single increment (its
// one-exchange form too), the multi-counter increment of coalesced rounds,
// batch, set, reset, delete, import, and the idempotent forms of the first
// three; TestEveryWritePathReportsItsChanges drives each of them.

// changeSeam is the store's side of the seam: what a write runs inside
// its transaction once its counters' rows are written and locked (the
// tallies, then the recorders: record), and whom it tells after the
// commit (the observers: committed). The counter store keeps one, and
// every write path of it goes through it.
type changeSeam struct {
	tallies   tallies             // what steps also count (tally.go)
	recorders []Recorder          // inside the transaction
	observers []counters.Observer // after the commit
}

// Recorder is work that must commit with a change or not at all, such as
// writing a webhook event for a threshold the change crossed. Register it
// with CounterStore.Record.
type Recorder interface {
	// Wants reports, without I/O, whether changes of the named counter need
	// the recorder. A write none of whose counters any recorder wants
	// pays nothing for recorders: the single increment then stays one
	// round trip.
	Wants(name string) bool
	// Record writes what changes imply inside their transaction, after the
	// counters' rows are written and locked: the changes are final. It is
	// given only the changes it wants. An error rolls the whole change back.
	Record(ctx context.Context, tx Execer, changes []counters.Change) error
}

// A QuietRecorder is a Recorder that can also tell, without I/O, a range
// of values within which changes of a counter record nothing, such as the
// values between two thresholds of the hooks that watch it. The single
// increment of a counter that only such recorders want is then one
// statement that refuses, as a bound does, a step from or to a value
// outside the range; a refused step is written the usual way, in a
// transaction with the recorders (see incrementQuiet). The range is a
// hint and may be stale: the statement checks it against the row.
type QuietRecorder interface {
	Recorder
	// Quiet returns lo <= hi such that a change of name from a value in
	// [lo, hi] to a value in [lo, hi] records nothing, or false when it
	// cannot tell.
	Quiet(name string) (lo, hi int64, ok bool)
}

// Execer is the transaction a Recorder writes in: a *sql.Tx, or the
// connection of a transaction sent as a multi-statement exchange.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Record registers recorders; call it before the store serves.
func (s *CounterStore) Record(rs ...Recorder) { s.seam.recorders = append(s.seam.recorders, rs...) }

// Observe registers observers; call it before the store serves.
func (s *CounterStore) Observe(os ...counters.Observer) {
	s.seam.observers = append(s.seam.observers, os...)
}

// heldForCommit reports whether an import that commits at once must keep
// the change of name until its commit: some observer wants it that cannot
// be told of the import by a prefix (see counters.PrefixObserver).
func (s *changeSeam) heldForCommit(name string) bool {
	for _, o := range s.observers {
		if _, summary := o.(counters.PrefixObserver); !summary && o.Wants(name) {
			return true
		}
	}
	return false
}

// recorded reports whether any recorder wants changes of name.
func (s *changeSeam) recorded(name string) bool {
	for _, r := range s.recorders {
		if r.Wants(name) {
			return true
		}
	}
	return false
}

// quiet is the range within which changes of name record nothing for
// every recorder that wants it, or false when one of them cannot tell.
func (s *changeSeam) quiet(name string) (lo, hi int64, ok bool) {
	lo, hi = math.MinInt64, math.MaxInt64
	for _, r := range s.recorders {
		if !r.Wants(name) {
			continue
		}
		q, isQuiet := r.(QuietRecorder)
		if !isQuiet {
			return 0, 0, false
		}
		rlo, rhi, rok := q.Quiet(name)
		if !rok {
			return 0, 0, false
		}
		lo, hi = max(lo, rlo), min(hi, rhi)
	}
	return lo, hi, lo <= hi
}

// record runs, inside the transaction ex, everything that commits with
// changes: what their tallies count (history, labels: see
// tallies.counts), then each recorder with the changes it wants.
func (s *changeSeam) record(ctx context.Context, ex Execer, changes []counters.Change) error {
	if err := s.tallies.exec(ctx, ex, changes); err != nil {
		return err
	}
	return s.recordOthers(ctx, ex, changes)
}

// recordOthers is record without the history and labels, for the paths
// that send their statements in the same exchange as the counters' upsert.
func (s *changeSeam) recordOthers(ctx context.Context, ex Execer, changes []counters.Change) error {
	for _, r := range s.recorders {
		if wanted := counters.Wanted(changes, r.Wants); len(wanted) > 0 {
			if err := r.Record(ctx, ex, wanted); err != nil {
				return err
			}
		}
	}
	return nil
}

// committed tells each observer of the changes it wants, which committed,
// and a DeletionObserver of every deletion too.
func (s *changeSeam) committed(ctx context.Context, changes []counters.Change) {
	deletes := counters.AnyDeleted(changes)
	for _, o := range s.observers {
		wants := o.Wants
		if deletes && wantsDeletions(o) { // deletions are rare: most rounds skip the type check
			wants = func(name string) bool {
				return o.Wants(name) || slices.ContainsFunc(changes, func(c counters.Change) bool { return c.Deleted && c.Name == name })
			}
		}
		if wanted := counters.Wanted(changes, wants); len(wanted) > 0 {
			o.Committed(ctx, wanted)
		}
	}
}

// wantsDeletions says whether o is a DeletionObserver that asks to be
// told of every deletion.
func wantsDeletions(o counters.Observer) bool {
	d, ok := o.(counters.DeletionObserver)
	return ok && d.WantsDeletions()
}

// committedAtOnce tells the observers of an import that committed at once:
// held are the changes heldForCommit kept, prefix the longest common
// prefix of all the changed names (when any changed).
func (s *changeSeam) committedAtOnce(ctx context.Context, held []counters.Change, prefix string, any bool) {
	for _, o := range s.observers {
		if po, summary := o.(counters.PrefixObserver); summary {
			if any {
				po.CommittedUnder(ctx, prefix)
			}
		} else if wanted := counters.Wanted(held, o.Wants); len(wanted) > 0 {
			o.Committed(ctx, wanted)
		}
	}
}

// commitRecorded ends a transaction sent as an exchange whose changes a
// recorder wants: the recorders, then COMMIT.
func (s *changeSeam) commitRecorded(ctx context.Context, conn *sql.Conn, changes []counters.Change) error {
	if err := s.recordOthers(ctx, conn, changes); err != nil {
		return err
	}
	_, err := conn.ExecContext(ctx, "COMMIT")
	return err
}

// writeTx runs fn in a transaction of db under retry (see retryTx): fn
// makes the changes and returns them, record runs after it in the same
// transaction, and once it committed the observers are told.
func (s *changeSeam) writeTx(ctx context.Context, db *sql.DB, op string, fn func(tx *sql.Tx) ([]counters.Change, error)) error {
	var changes []counters.Change
	err := retryTx(ctx, db, op, func(tx *sql.Tx) (err error) {
		if changes, err = fn(tx); err != nil {
			return err
		}
		return s.record(ctx, tx, changes)
	})
	if err == nil {
		s.committed(ctx, changes)
	}
	return err
}

// incrementChange is the change that inc made when it took its counter to
// value at now: its parts are its steps, or all of By counts at now with
// its Extra. Prev is exact: value is Prev+By in int64, so value-By is
// Prev.
func incrementChange(inc counters.Increment, value int64, now time.Time) counters.Change {
	steps := inc.Parts
	if steps == nil {
		steps = []counters.Part{{At: now, By: inc.By, Extra: inc.Extra}}
	}
	return counters.Change{Name: inc.Name, Prev: value - inc.By, Value: value, Steps: steps, At: now}
}
