package storage

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
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
// Steps of one quarter are summed where the sum fits an int64; a
// counter's steps in one batch may add up to more than an int64 holds
// (from the lowest value to the highest), the column does not overflow:
// those stay apart, and MySQL adds repeated rows up itself.
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
	// A labelled round keeps its waiters' steps apart (their labels
	// differ); their history is one sum per quarter wherever it fits.
	if len(adds) < 2 {
		return adds
	}
	out := adds[:1]
	for _, a := range adds[1:] {
		last := &out[len(out)-1]
		if a.name == last.name && a.q == last.q && a.day.Equal(last.day) {
			if sum, ok := counters.Add(last.by, a.by); ok {
				last.by = sum
				continue
			}
		}
		out = append(out, a)
	}
	return out
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

// historyTally is history's write side: as a Tally, the first of every
// counter store (NewCounterStore), so that its rows are locked right after
// the counters', it counts every step (the store's History switches it),
// and carries no Extra; its slot in the counter's row is the store's own
// one-statement write (below), which it moves out when a step of another
// quarter finds it taken (refused). The tally's statements are the way of
// every other writer.
type historyTally struct {
	db *sql.DB
	on *bool // the counter store's History; nil: on (a store that only purges)
}

func (historyTally) takes(counters.Extra) bool { return false }

// counts implements Tally: the statement that adds changes' steps to
// history, none when there is nothing to add or history is off.
func (t historyTally) counts(changes []counters.Change) []statement {
	if t.on != nil && !*t.on {
		return nil
	}
	if q, args := historyUpsert(historyAdds(changes)); q != "" {
		return []statement{{q, args}}
	}
	return nil
}

// deletes implements Tally.
func (historyTally) deletes() []string {
	return []string{"DELETE FROM counter_history WHERE name = ?", "DELETE FROM counter_history_month WHERE name = ?"}
}

// purges implements Tally: counter_history's rows of the days before
// before, then the rolled-up months that end by then, then the days
// before before of the month that holds it, then the slots of counters
// idle since then (see PurgeHistory).
func (historyTally) purges(ctx context.Context, db *sql.DB, before time.Time) []func(limit int) (int64, error) {
	h := &HistoryStore{db: db}
	return []func(int) (int64, error){
		deleting(ctx, db, "DELETE FROM counter_history WHERE day < ? ORDER BY day, name LIMIT ?", before.Format(time.DateOnly)),
		deleting(ctx, db, "DELETE FROM counter_history_month WHERE month < ? ORDER BY month, name LIMIT ?", monthOf(before).Format(time.DateOnly)),
		func(limit int) (int64, error) { return h.trimMonths(ctx, before, limit) },
		func(limit int) (int64, error) { return h.purgeSlots(ctx, quarterNumber(before), limit) },
	}
}

// The slot (migrations/009_history_slot.up.sql): a counter's row keeps the
// sum of one quarter hour's steps, so that the hot increments, the single
// one and the coalesced round, add to history inside their one upsert of
// the counter, as one statement with no transaction, where a write to
// counter_history needs a transaction around two. The other writers of
// history (batch, the idempotent forms, rounds whose steps span quarters,
// counters a recorder wants) keep writing counter_history; reads add the
// slot to it (see history_read.go), so either place is exact.
//
// A step of another quarter than the slot's finds the slot taken: the
// upsert refuses it like a bound (NULL into NOT NULL, error 1048, nothing
// changed), flushSlots moves the slot into counter_history in a
// transaction of its own, and the increment is written the way of the
// other writers, which also tells a bound's refusal from the slot's. So
// each counter pays that once a quarter hour in which it changes.

// refused reports whether err is a one-statement write's refusal (error
// 1048: a bound, a slot of another quarter, a quiet range), after which
// the write goes the other writers' way, which tells which refused. With
// slot it first moves the slots of names that hold another quarter than
// now's (flushSlots), so that their next steps fit them again. Any other
// error, or one of the move, is returned.
func (t historyTally) refused(ctx context.Context, err error, slot bool, now time.Time, names ...string) (bool, error) {
	if mysqlErrNumber(err) != erBadNull {
		return false, err
	}
	if slot {
		if err := t.flushSlots(ctx, names, quarterNumber(now)); err != nil {
			return false, err
		}
	}
	return true, nil
}

// quarterNumber is the quarter hour of t, counted from 1970-01-01 UTC: the
// slot's history_quarter.
func quarterNumber(t time.Time) int64 {
	return t.Unix() / int64(counters.HistoryGrain/time.Second)
}

// slotUpsert is the part of an upsert of counter that adds its step to
// the slot: its insert columns, the condition under which value's
// assignment accepts the step (slotFree), and the slot's assignments,
// which must follow value's: both read the slot as it was. The step is
// VALUES(history_sum), the quarter VALUES(history_quarter). A step of 0
// leaves the slot alone, and so does the padding of the prepared upserts.
const (
	slotColumns = ", history_quarter, history_sum"
	slotFree    = "(VALUES(history_sum) = 0 OR history_quarter IS NULL OR history_quarter = VALUES(history_quarter) OR history_sum = 0)"
	slotUpdate  = `
  history_sum = IF(VALUES(history_sum) = 0, history_sum,
                   IF(history_quarter = VALUES(history_quarter), history_sum + VALUES(history_sum), VALUES(history_sum))),
  history_quarter = IF(VALUES(history_sum) = 0, history_quarter, VALUES(history_quarter)),`
)

// flushSlots moves the slots of names that hold a non-zero sum of another
// quarter than keep into counter_history, in a transaction of its own:
// the figure a read gives, counter_history plus the slot, stays the same
// throughout. The counters' rows are locked first, in name order, as
// every writer of history locks them.
func (t historyTally) flushSlots(ctx context.Context, names []string, keep int64) error {
	return inTx(ctx, t.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		args := make([]any, 0, len(names)+1)
		for _, n := range names {
			args = append(args, n)
		}
		rows, err := tx.QueryContext(ctx, "SELECT name, history_quarter FROM counter WHERE name IN ("+placeholders("?", ", ", len(names))+
			") AND history_quarter <> ? AND history_sum <> 0 ORDER BY name FOR UPDATE", append(args, keep)...)
		if err != nil {
			return err
		}
		byQuarter := map[int64][]any{}
		var taken []any
		for rows.Next() {
			var name string
			var q int64
			if err := rows.Scan(&name, &q); err != nil {
				rows.Close()
				return err
			}
			byQuarter[q] = append(byQuarter[q], name)
			taken = append(taken, name)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(taken) == 0 {
			return nil
		}
		for _, q := range slices.Sorted(maps.Keys(byQuarter)) {
			in := byQuarter[q]
			day, col := quarterDay(q)
			_, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO counter_history (name, day, q%[1]d)
				SELECT name, ?, history_sum FROM counter WHERE name IN (%[2]s) AND history_quarter = ?
				ON DUPLICATE KEY UPDATE q%[1]d = COALESCE(q%[1]d + VALUES(q%[1]d), q%[1]d, VALUES(q%[1]d))`, col, placeholders("?", ", ", len(in))),
				append(append([]any{day.Format(time.DateOnly)}, in...), q)...)
			if err != nil {
				return err
			}
		}
		_, err = tx.ExecContext(ctx, "UPDATE counter SET history_quarter = NULL, history_sum = NULL WHERE name IN ("+placeholders("?", ", ", len(taken))+")", taken...)
		return err
	})
}

// quarterDay is the UTC day of the quarter hour numbered q, and its
// quarter in that day.
func quarterDay(q int64) (time.Time, int) {
	perDay := int64(history.QuartersPerDay)
	return time.Unix(q/perDay*86400, 0).UTC(), int(q % perDay)
}
