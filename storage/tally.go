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
func (s *CounterStore) Count(tallies ...Tally) {
	for _, t := range tallies {
		if l, ok := t.(*labelTally); ok {
			s.labels = l
		}
		s.tallies = append(s.tallies, t)
	}
}

// countsOf are the statements that count changes' steps beside their
// values, in the order every writer takes their locks: each tally's in
// the order registered, history's first.
func (s *CounterStore) countsOf(changes []counters.Change) []statement {
	var out []statement
	for _, t := range s.tallies {
		out = append(out, t.counts(changes)...)
	}
	return out
}

// addCounts runs countsOf inside the transaction ex, which has locked the
// changes' counters.
func (s *CounterStore) addCounts(ctx context.Context, ex Execer, changes []counters.Change) error {
	for _, st := range s.countsOf(changes) {
		if _, err := ex.ExecContext(ctx, st.query, st.args...); err != nil {
			return err
		}
	}
	return nil
}

// counted reports whether a registered tally other than except counts an
// Extra of incs: for a write without one, a nil comparison per step.
func (s *CounterStore) counted(incs []counters.Increment, except Tally) bool {
	takes := func(x counters.Extra) bool {
		return x != nil && slices.ContainsFunc(s.tallies, func(t Tally) bool { return t != except && t.takes(x) })
	}
	return slices.ContainsFunc(incs, func(inc counters.Increment) bool {
		if inc.Parts == nil {
			return takes(inc.Extra)
		}
		return slices.ContainsFunc(inc.Parts, func(p counters.Part) bool { return takes(p.Extra) })
	})
}
