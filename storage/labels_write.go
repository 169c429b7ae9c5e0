package storage

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
)

// The write side of breakdowns (migrations/012_counter_label.up.sql):
// the labels of an increment's steps (counters.Part.Labels) add the steps
// to their values' rows of the UTC day, in the same transaction as the
// value and its history, after both are locked, as one statement per
// transaction however many increments it carries (a coalesced round of
// 1,000 labelled page hits is one upsert of its distinct values).
// Unlabelled steps write nothing here: the hot single increment keeps its
// one statement.
//
// The bound. A counter keeps at most LabelValues distinct values per label
// and day; a step of a further value counts as counters.LabelOther. MySQL
// decides, inside the upsert: a value is written as itself when the day
// already holds it, or when the values the day holds plus its rank among
// this statement's new values stay within the bound. Every writer of a
// counter's labels holds the counter's row lock (its upsert took it
// first), so no other process can add a value between that count and the
// write: the bound is exact across processes without a cache that could
// go stale.

// labelAdd is one value's share of a counter's steps on one UTC day.
type labelAdd struct {
	name, label string
	day         time.Time
	value       string
	by          int64
}

// labelAdds lists what changes add to their labels, one entry per
// counter, label, day and value, in that order (the order in which every
// writer locks the rows). Steps of one value are summed where the sum
// fits in an int64; else they stay two entries, which the upsert adds.
func labelAdds(changes []counters.Change) []labelAdd {
	var adds []labelAdd
	for _, c := range changes {
		for _, p := range c.Steps {
			if p.By == 0 || len(p.Labels) == 0 {
				continue
			}
			day, _ := history.QuarterOf(p.At)
			for k, v := range p.Labels {
				adds = append(adds, labelAdd{name: c.Name, label: k, day: day, value: v, by: p.By})
			}
		}
	}
	if len(adds) == 0 {
		return nil
	}
	slices.SortStableFunc(adds, func(a, b labelAdd) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := strings.Compare(a.label, b.label); c != 0 {
			return c
		}
		if c := a.day.Compare(b.day); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
	out := adds[:1]
	for _, a := range adds[1:] {
		last := &out[len(out)-1]
		if a.name == last.name && a.label == last.label && a.day.Equal(last.day) && a.value == last.value {
			if sum, ok := counters.Add(last.by, a.by); ok {
				last.by = sum
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// labelUpsert is the statement that adds adds to their rows, deciding
// each value against the bound (see above), "" when there is nothing to
// add. Rank is DENSE_RANK so that a value that came twice (a sum beyond
// int64) is one new value. Under REPEATABLE READ the subqueries lock the
// rows they read (INSERT ... SELECT), which the counter's lock already
// serializes.
func labelUpsert(adds []labelAdd, bound int) (string, []any) {
	if len(adds) == 0 {
		return "", nil
	}
	var q strings.Builder
	q.Grow(700 + 40*len(adds))
	q.WriteString(`INSERT INTO counter_label (name, label, day, value, count)
SELECT name, label, day,
  IF(known OR stored + DENSE_RANK() OVER (PARTITION BY name, label, day, known ORDER BY value) <= ?, value, '` + counters.LabelOther + `'),
  n
FROM (SELECT t.name, t.label, t.day, t.value, t.n,
    EXISTS (SELECT 1 FROM counter_label c WHERE c.name = t.name AND c.label = t.label AND c.day = t.day AND c.value = t.value) AS known,
    (SELECT COUNT(*) FROM counter_label c WHERE c.name = t.name AND c.label = t.label AND c.day = t.day AND c.value <> '` + counters.LabelOther + `') AS stored
  FROM (SELECT CAST(? AS BINARY) AS name, CAST(? AS BINARY) AS label, CAST(? AS DATE) AS day, CAST(? AS BINARY) AS value, CAST(? AS DECIMAL(30,0)) AS n`)
	args := make([]any, 0, 1+5*len(adds))
	args = append(args, bound)
	for i, a := range adds {
		if i > 0 {
			q.WriteString("\n    UNION ALL SELECT ?, ?, ?, ?, ?")
		}
		args = append(args, a.name, a.label, a.day.Format(time.DateOnly), a.value, a.by)
	}
	q.WriteString(`) t) r
ON DUPLICATE KEY UPDATE count = count + VALUES(count)`)
	return q.String(), args
}

// labelsOf is the statement that adds changes' labels, "" when there are
// none or breakdowns are off.
func (s *CounterStore) labelsOf(changes []counters.Change) (string, []any) {
	if !s.Labels {
		return "", nil
	}
	bound := s.LabelValues
	if bound <= 0 {
		bound = counters.DefaultLabelValues
	}
	return labelUpsert(labelAdds(changes), bound)
}

// countsOf are the statements that count changes' steps beside their
// values, in the order every writer takes their locks: history, then
// labels.
func (s *CounterStore) countsOf(changes []counters.Change) []statement {
	var out []statement
	if q, args := s.historyOf(changes); q != "" {
		out = append(out, statement{q, args})
	}
	if q, args := s.labelsOf(changes); q != "" {
		out = append(out, statement{q, args})
	}
	return out
}

// labelled reports whether any of incs carries labels that the store
// counts: such a write goes the transactional way.
func (s *CounterStore) labelled(incs []counters.Increment) bool {
	if !s.Labels {
		return false
	}
	return slices.ContainsFunc(incs, func(inc counters.Increment) bool {
		if len(inc.Labels) > 0 && inc.Parts == nil {
			return true
		}
		return slices.ContainsFunc(inc.Parts, func(p counters.Part) bool { return len(p.Labels) > 0 })
	})
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
