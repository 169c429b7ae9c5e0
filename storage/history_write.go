package storage

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"countersvc/counters"
	"countersvc/history"
)

// The write side of history (see migrations/006_history.up.sql): every
// increment adds its step to its counter's row of the UTC day, in the column
// of the quarter hour, in the transaction that changes the value, after the
// counter's row is locked. Sets, resets and bounds write no history.

// historyAdd is one step added to a counter's history.
type historyAdd struct {
	name string
	day  time.Time // the UTC day
	q    int       // the quarter hour of the day, 0 to 95
	by   int64
}

// historyAdds lists what changes add to history: each increment's steps
// (sets, resets, imports and deletions have none). Steps of 0 add nothing. The list is in order of
// name, day and quarter, the order in which every writer locks the rows.
// Steps are not summed here: a counter's steps in one batch may add up to
// more than an int64 holds (from the lowest value to the highest), the
// column does not overflow; MySQL adds repeated rows up itself.
func historyAdds(changes []counters.Change) []historyAdd {
	adds := make([]historyAdd, 0, len(changes))
	add := func(name string, at time.Time, by int64) {
		if by == 0 {
			return
		}
		day, q := history.QuarterOf(at)
		adds = append(adds, historyAdd{name: name, day: day, q: q, by: by})
	}
	for _, c := range changes {
		for _, p := range c.Steps {
			add(c.Name, p.At, p.By)
		}
	}
	slices.SortStableFunc(adds, func(a, b historyAdd) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := a.day.Compare(b.day); c != 0 {
			return c
		}
		return a.q - b.q
	})
	return adds
}

// historyUpsert is one statement that adds adds to their buckets, "" when
// there is nothing to add. Only the columns of the quarters it touches are
// named; the others of a row stay as they are (NULL in a new row). In the
// update, COALESCE keeps a column that this row leaves NULL and starts one
// that was NULL.
func historyUpsert(adds []historyAdd) (string, []any) {
	if len(adds) == 0 {
		return "", nil
	}
	var cols []int
	for _, a := range adds {
		if !slices.Contains(cols, a.q) {
			cols = append(cols, a.q)
		}
	}
	slices.Sort(cols)
	var q strings.Builder
	q.WriteString("INSERT INTO counter_history (name, day")
	for _, c := range cols {
		fmt.Fprintf(&q, ", q%d", c)
	}
	q.WriteString(") VALUES ")
	args := make([]any, 0, 3*len(adds))
	for i, a := range adds {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?")
		for _, c := range cols {
			if c == a.q {
				q.WriteString(", ?")
			} else {
				q.WriteString(", NULL")
			}
		}
		q.WriteString(")")
		args = append(args, a.name, a.day.Format(time.DateOnly), a.by)
	}
	q.WriteString(" ON DUPLICATE KEY UPDATE ")
	for i, c := range cols {
		if i > 0 {
			q.WriteString(", ")
		}
		fmt.Fprintf(&q, "q%[1]d = COALESCE(q%[1]d + VALUES(q%[1]d), q%[1]d, VALUES(q%[1]d))", c)
	}
	return q.String(), args
}

// historyOf is the statement that adds changes' steps to history, "" when
// there is nothing to add or history is off.
func (s *CounterStore) historyOf(changes []counters.Change) (string, []any) {
	if !s.History {
		return "", nil
	}
	return historyUpsert(historyAdds(changes))
}

// addHistory adds changes' steps to history inside the transaction ex,
// which has locked their counters.
func (s *CounterStore) addHistory(ctx context.Context, ex Execer, changes []counters.Change) error {
	q, args := s.historyOf(changes)
	if q == "" {
		return nil
	}
	_, err := ex.ExecContext(ctx, q, args...)
	return err
}
