package storage

import (
	"context"
	"database/sql"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
)

// Settling pending labels (migrations/013): counter_label_pending's rows,
// taken in the order of their key (a counter's in the order its writes
// committed), become counter_label's rows. Each new value of a counter,
// label and day is kept as itself while the day holds fewer than the
// bound of values, else counted as breakdowns.LabelOther: settle decides,
// from the values the day already holds and the rows in that order. A
// read settles the rows still pending in its snapshot the same way,
// without writing, so it answers what a settling pass would leave, and a
// pass that runs meanwhile changes no answer. The pass is one transaction
// that locks the rows it takes (an increment adds rows after them, never
// between: the counter's row lock orders its writes), writes their sums
// and deletes them; two passes at once take the rows one after the other.

// pendingRow is one row of counter_label_pending.
type pendingRow struct {
	name string
	at   time.Time
	day  time.Time
	adds []byte
}

// labelDay is one counter's label on one UTC day: the unit of the bound.
type labelDay struct {
	name, label string
	day         time.Time
}

// settle decides rows, in their key's order, against held, the values each
// labelDay already holds (LabelOther not among them), which it extends
// with the values it keeps; it calls add with each value's share as it is
// to be counted. With only set, it settles that label alone.
func settle(rows []pendingRow, held map[labelDay]map[string]bool, bound int, only string, add func(labelDay, string, int64)) error {
	spelt := map[string]string{}
	for _, r := range rows {
		err := unpackAddsInterned(r.adds, spelt, func(label, value string, by int64) {
			if only != "" && label != only {
				return
			}
			g := labelDay{r.name, label, r.day}
			values := held[g]
			if values == nil {
				values = map[string]bool{}
				held[g] = values
			}
			if !values[value] {
				if len(values) >= bound {
					value = breakdowns.LabelOther
				} else {
					values[value] = true
				}
			}
			add(g, value, by)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// heldValues reads the values (LabelOther aside) that counter_label holds
// for each labelDay of rows (of only, when set), through q.
func heldValues(ctx context.Context, q *sql.Tx, rows []pendingRow, only string) (map[labelDay]map[string]bool, error) {
	held := map[labelDay]map[string]bool{}
	seen := map[labelDay]bool{}
	var args []any
	spelt := map[string]string{}
	for _, r := range rows {
		err := unpackAddsInterned(r.adds, spelt, func(label, _ string, _ int64) {
			g := labelDay{r.name, label, r.day}
			if (only != "" && label != only) || seen[g] {
				return
			}
			seen[g] = true
			args = append(args, g.name, g.label, g.day.Format(time.DateOnly))
		})
		if err != nil {
			return nil, err
		}
	}
	for part := range slices.Chunk(args, 3*500) {
		rs, err := q.QueryContext(ctx, "SELECT name, label, day, value FROM counter_label WHERE (name, label, day) IN ("+
			placeholders("(?, ?, ?)", ", ", len(part)/3)+") AND value <> '"+breakdowns.LabelOther+"'", part...)
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var g labelDay
			var value string
			if err := rs.Scan(&g.name, &g.label, &g.day, &value); err != nil {
				rs.Close()
				return nil, err
			}
			if held[g] == nil {
				held[g] = map[string]bool{}
			}
			held[g][value] = true
		}
		if err := rs.Close(); err != nil {
			return nil, err
		}
	}
	return held, nil
}

// readPending reads counter_label_pending's rows selected by where (with
// args), in the order they are settled in, with lock appended.
func readPending(ctx context.Context, q *sql.Tx, where string, args []any, lock string) ([]pendingRow, error) {
	rs, err := q.QueryContext(ctx, "SELECT name, at, day, adds FROM counter_label_pending "+where+" ORDER BY name, at, day"+lock, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var rows []pendingRow
	for rs.Next() {
		var r pendingRow
		if err := rs.Scan(&r.name, &r.at, &r.day, &r.adds); err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, rs.Err()
}

// pendingIn reads the pending rows of the counters that cond selects
// (with args) whose days are in [from, to), and those counters' label
// slots of such a day as their last pending rows (a slot's updated_at is
// after every pending row of its counter), in the order they are settled
// in. A slot moves out with a write that finds it full, or with a pass
// once its counter has been left alone for a while (moveIdleSlots).
func pendingIn(ctx context.Context, tx *sql.Tx, cond string, args []any, from, to time.Time) ([]pendingRow, error) {
	args = append(args, from.Format(time.DateOnly), to.Format(time.DateOnly))
	rows, err := readPending(ctx, tx, "WHERE "+cond+" AND day >= ? AND day < ?", args, "")
	if err != nil {
		return nil, err
	}
	rs, err := tx.QueryContext(ctx, "SELECT name, updated_at, label_day, label_slot FROM counter WHERE "+cond+
		" AND label_slot IS NOT NULL AND label_day >= ? AND label_day < ?", args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	slots := false
	for rs.Next() {
		var r pendingRow
		if err := rs.Scan(&r.name, &r.at, &r.day, &r.adds); err != nil {
			return nil, err
		}
		rows, slots = append(rows, r), true
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	if slots {
		slices.SortStableFunc(rows, func(a, b pendingRow) int {
			if c := strings.Compare(a.name, b.name); c != 0 {
				return c
			}
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return a.day.Compare(b.day)
		})
	}
	return rows, nil
}

// slotIdle is how long a label slot waits, unwritten, for a write to move
// it out, before a settling pass does.
const slotIdle = time.Minute

// Settle implements breakdowns.Settler: it moves at most limit label
// slots that are idle (moveIdleSlots), then settles at most limit pending
// rows, the first in the key's order, in one transaction, and returns how
// many of both. READ COMMITTED: the locking read takes only the rows it
// returns, never the gap after them, where increments add theirs.
func (s *BreakdownStore) Settle(ctx context.Context, limit int) (int, error) {
	const op = "storage.Settle"
	moved, err := s.moveIdleSlots(ctx, limit)
	if err != nil {
		return 0, mapError(op, err, true)
	}
	n, err := s.settle(ctx, limit)
	return moved + n, err
}

// moveIdleSlots moves at most limit label slots to pending rows: those
// of counters that no write has changed for slotIdle (by the server's
// clock), and those holding a day before today (UTC). A slot's row is
// keyed by its counter's updated_at, as a write's move keys it: the slot
// came after every pending row of its counter. A counter a write holds is
// skipped: that write, or the next pass, moves its slot.
func (s *BreakdownStore) moveIdleSlots(ctx context.Context, limit int) (int, error) {
	var n int
	err := retry(ctx, "storage.Settle", func() error {
		return inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
			rs, err := tx.QueryContext(ctx, "SELECT name FROM counter FORCE INDEX (counter_label_slot_day) WHERE label_day IS NOT NULL AND (label_day < UTC_DATE() OR updated_at < UTC_TIMESTAMP(6) - INTERVAL "+
				strconv.Itoa(int(slotIdle/time.Second))+" SECOND) LIMIT "+strconv.Itoa(limit)+" FOR UPDATE SKIP LOCKED")
			if err != nil {
				return err
			}
			var names []any
			for rs.Next() {
				var name []byte
				if err := rs.Scan(&name); err != nil {
					rs.Close()
					return err
				}
				names = append(names, name)
			}
			if err := rs.Close(); err != nil || len(names) == 0 {
				n = 0
				return err
			}
			in := placeholders("?", ", ", len(names))
			for _, q := range []string{
				"INSERT INTO counter_label_pending (name, at, day, adds) SELECT name, updated_at, label_day, label_slot FROM counter WHERE name IN (" + in +
					") AND label_slot IS NOT NULL ON DUPLICATE KEY UPDATE adds = CONCAT(adds, VALUES(adds))",
				"UPDATE counter SET label_slot = NULL, label_day = NULL WHERE name IN (" + in + ")",
			} {
				if _, err := tx.ExecContext(ctx, q, names...); err != nil {
					return err
				}
			}
			n = len(names)
			return nil
		})
	})
	return n, err
}

// settle settles at most limit pending rows (see Settle).
func (s *BreakdownStore) settle(ctx context.Context, limit int) (int, error) {
	const op = "storage.Settle"
	var n int
	err := retry(ctx, op, func() error {
		return inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
			rows, err := readPending(ctx, tx, "", nil, " LIMIT "+strconv.Itoa(limit)+" FOR UPDATE")
			if err != nil || len(rows) == 0 {
				n = 0
				return err
			}
			held, err := heldValues(ctx, tx, rows, "")
			if err != nil {
				return err
			}
			type key struct {
				labelDay
				value string
			}
			var order []key
			sums := map[key][]int64{} // more than one where a sum passes int64
			err = settle(rows, held, s.bound(), "", func(g labelDay, value string, by int64) {
				k := key{g, value}
				got, ok := sums[k]
				if !ok {
					order = append(order, k)
				} else if sum, fits := counters.Add(got[len(got)-1], by); fits {
					got[len(got)-1] = sum
					return
				}
				sums[k] = append(got, by)
			})
			if err != nil {
				return err
			}
			var adds []any
			for _, k := range order {
				for _, by := range sums[k] {
					adds = append(adds, k.name, k.label, k.day.Format(time.DateOnly), k.value, by)
				}
			}
			for part := range slices.Chunk(adds, 5*500) {
				if _, err := tx.ExecContext(ctx, "INSERT INTO counter_label (name, label, day, value, count) VALUES "+
					placeholders("(?, ?, ?, ?, ?)", ", ", len(part)/5)+" ON DUPLICATE KEY UPDATE count = count + VALUES(count)", part...); err != nil {
					return err
				}
			}
			keys := make([]any, 0, 3*len(rows))
			for _, r := range rows {
				keys = append(keys, r.name, r.at, r.day.Format(time.DateOnly))
			}
			for part := range slices.Chunk(keys, 3*500) {
				if _, err := tx.ExecContext(ctx, "DELETE FROM counter_label_pending WHERE (name, at, day) IN ("+
					placeholders("(?, ?, ?)", ", ", len(part)/3)+")", part...); err != nil {
					return err
				}
			}
			n = len(rows)
			return nil
		})
	})
	return n, mapError(op, err, true)
}

// bound is how many values of a label a counter keeps per day.
func (s *BreakdownStore) bound() int {
	if s.Bound <= 0 {
		return breakdowns.DefaultLabelValues
	}
	return s.Bound
}
