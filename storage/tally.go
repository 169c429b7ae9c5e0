package storage

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// A Tally is what a step also counts beside its counter's value: history's
// quarters are one (history_write.go, every store's first), breakdowns'
// labels another (labels_write.go). The counter store runs each registered tally (Count)
// without knowing what it counts: in every transaction that changes
// counters it adds the tally's statements after the counters' upsert,
// with Delete it removes the tally's rows of the counter, and history's
// retention removes what the tally kept of the days it purges. A tally
// that also counts a kind of counters.Extra says which (takes); a step's
// Extra that no registered tally takes is carried and written as if it
// were nil.
//
// A new tally is a file here that implements it, its domain's package
// (the kind of Extra, if it has one) and its registration in
// internal/wire: docs/capabilities.md walks through one (tally_test.go).
type Tally interface {
	// counts are the statements that count changes' steps, inside the
	// transaction that upserted their counters and holds their rows'
	// locks (taken in name order, so the tally's rows are locked after
	// them, in that order); none when there is nothing to count.
	counts(changes []counters.Change) []statement
	// deletes are the statements, each taking the counter's name, that
	// remove its rows when the counter goes, in the transaction that
	// deleted its row.
	deletes() []string
	// purges are the steps of history's retention that remove what the
	// tally kept of the days before before, each at most limit rows,
	// returning how many it removed; the tallies registered last run
	// first, so that a read never finds labels beyond their history.
	purges(ctx context.Context, db *sql.DB, before time.Time) []func(limit int) (int64, error)
	// takes reports whether the tally counts x, a step's Extra (never
	// nil): such a step's write goes the transactional way.
	takes(x counters.Extra) bool
}

// Count registers tallies: each counts with every change of a counter
// from then on, in the order registered (the order of their locks).
// internal/wire registers those of the capabilities it builds, before the
// store takes its first write.
func (s *CounterStore) Count(tallies ...Tally) { s.seam.tallies.add(tallies...) }

// tallies are the tallies a counter store runs, in the order registered,
// history's first.
type tallies struct {
	list   []Tally
	labels *labelTally // the one with a slot in the counter's row; nil: none
}

// add registers ts after those before.
func (ts *tallies) add(more ...Tally) {
	for _, t := range more {
		if l, ok := t.(*labelTally); ok {
			ts.labels = l
		}
		ts.list = append(ts.list, t)
	}
}

// counts are the statements that count changes' steps beside their
// values, in the order every writer takes their locks: each tally's in
// the order registered, history's first.
func (ts *tallies) counts(changes []counters.Change) []statement {
	var out []statement
	for _, t := range ts.list {
		out = append(out, t.counts(changes)...)
	}
	return out
}

// exec runs counts inside the transaction ex, which has locked the
// changes' counters.
func (ts *tallies) exec(ctx context.Context, ex Execer, changes []counters.Change) error {
	for _, st := range ts.counts(changes) {
		if _, err := ex.ExecContext(ctx, st.query, st.args...); err != nil {
			return err
		}
	}
	return nil
}

// deletes removes, inside the transaction ex that deleted the counter
// name's row, what each tally kept of it, in the order registered.
func (ts *tallies) deletes(ctx context.Context, ex Execer, name string) error {
	for _, t := range ts.list {
		for _, q := range t.deletes() {
			if _, err := ex.ExecContext(ctx, q, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// counted reports whether a registered tally other than except counts an
// Extra of incs: for a write without one, a nil comparison per step.
func (ts *tallies) counted(incs []counters.Increment, except Tally) bool {
	takes := func(x counters.Extra) bool {
		return x != nil && slices.ContainsFunc(ts.list, func(t Tally) bool { return t != except && t.takes(x) })
	}
	return slices.ContainsFunc(incs, func(inc counters.Increment) bool {
		if inc.Parts == nil {
			return takes(inc.Extra)
		}
		return slices.ContainsFunc(inc.Parts, func(p counters.Part) bool { return takes(p.Extra) })
	})
}
