package storage

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
)

// HistoryStore is history's own store: it reads what the counters' writes
// recorded, the counter_history rows and each counter's slot, as
// history.Store, and keeps them (roll-up, retention). The writes are
// history's tally (historyTally, history_write.go), which the counter
// store runs inside each increment, its slot inside the increment's own
// statement: a history that cost increments a second statement would
// halve them.
type HistoryStore struct {
	db      *sql.DB
	tallies []Tally // whose rows retention removes with history's (PurgeHistory)
}

var _ history.Store = (*HistoryStore)(nil)

// NewHistoryStore returns the history store of db.
func NewHistoryStore(db *DB) *HistoryStore {
	return &HistoryStore{db: db.DB, tallies: []Tally{historyTally{}}}
}

// HistoryOf returns the history store of the database s writes to, whose
// retention also removes what s's tallies (registered by then) kept.
func HistoryOf(s *CounterStore) *HistoryStore {
	return &HistoryStore{db: s.db, tallies: s.seam.tallies.list}
}

// quarterColumns is "q0, q1, ..., q95", or with sum set
// "SUM(q0), ..., SUM(q95)".
func quarterColumns(sum bool) string {
	var b strings.Builder
	for q := range history.QuartersPerDay {
		if q > 0 {
			b.WriteString(", ")
		}
		if sum {
			fmt.Fprintf(&b, "SUM(q%d)", q)
		} else {
			fmt.Fprintf(&b, "q%d", q)
		}
	}
	return b.String()
}

// slotQuarters is the slot of a counter's row (see history_write.go) as
// the columns of counter_history: its day, then history_sum in the column
// of its quarter and NULL in the others; with sum, summed over a group.
func slotQuarters(sum bool) string {
	var b strings.Builder
	b.WriteString("DATE('1970-01-01') + INTERVAL history_quarter DIV " + strconv.Itoa(history.QuartersPerDay) + " DAY AS day")
	for q := range history.QuartersPerDay {
		cell := fmt.Sprintf("IF(history_quarter MOD %d = %d, history_sum, NULL)", history.QuartersPerDay, q)
		if sum {
			cell = "SUM(" + cell + ")"
		}
		b.WriteString(", " + cell)
	}
	return b.String()
}

// A counter's history is its counter_history rows and its slot, read by
// one statement so that they come from one snapshot: a slot that moves
// into counter_history meanwhile (flushSlots) is counted once. A day may
// come twice, from either place: scanHistory adds them up.
var (
	historyOfName = "SELECT day, " + quarterColumns(false) +
		" FROM counter_history WHERE name = ? AND day >= ? AND day < ?" +
		" UNION ALL SELECT " + slotQuarters(false) +
		" FROM counter WHERE name = ? AND history_quarter >= ? AND history_quarter < ? ORDER BY day"
	historyOfPrefix = "SELECT day, " + quarterColumns(true) +
		" FROM counter_history WHERE %s AND name LIKE ? ESCAPE '!' GROUP BY day" +
		" UNION ALL SELECT " + slotQuarters(true) +
		" FROM counter WHERE name LIKE ? ESCAPE '!' AND history_quarter >= ? AND history_quarter < ? GROUP BY day ORDER BY day"
)

// maxDayList is the most days a prefix's read names one by one: each is
// then one range of the (day, name) key, the names under the prefix on that
// day. A longer range reads every name of its days and filters them.
const maxDayList = 1000

// HistoryDays implements history.Store. A counter's days are one range of
// the primary key; a prefix's days are summed by MySQL, day by day. Days
// the roll-up moved (history_rollup.go) come from their month rows, read
// in the same transaction: REPEATABLE READ gives its statements one
// snapshot, so a day that moves meanwhile is counted once.
func (s *HistoryStore) HistoryDays(ctx context.Context, name, prefix string, from, to time.Time) ([]history.UTCDay, error) {
	return s.historyDays(ctx, name, prefix, from, to, nil)
}

// LastChange implements webhooks.LastChanges: when the counter name (with
// prefix, the last of the counters under it) last changed, by an increment,
// a set or a reset; ok is false when there is none.
func (s *HistoryStore) LastChange(ctx context.Context, name, prefix string) (at time.Time, ok bool, err error) {
	query, arg := "SELECT MAX(updated_at) FROM counter WHERE name = ?", any(name)
	if prefix != "" {
		query, arg = "SELECT MAX(updated_at) FROM counter WHERE name LIKE ? ESCAPE '!'", likePrefix(prefix)
	}
	var last sql.NullTime
	if err := s.db.QueryRowContext(ctx, query, arg).Scan(&last); err != nil {
		return time.Time{}, false, mapError("storage.LastChange", err, false)
	}
	return last.Time, last.Valid, nil
}

var _ history.Spanner = (*HistoryStore)(nil)

// HistorySpans implements history.Spanner: a rolled-up day that no period
// boundary falls inside comes as its total, read without unpacking its
// figures (a year of months of a prefix is 365 days of each counter, and
// about 13 days with a boundary inside).
func (s *HistoryStore) HistorySpans(ctx context.Context, name, prefix string, from, to time.Time, inside func(day time.Time) bool) ([]history.UTCDay, error) {
	return s.historyDays(ctx, name, prefix, from, to, inside)
}

// historyDays is HistoryDays, and with inside HistorySpans.
func (s *HistoryStore) historyDays(ctx context.Context, name, prefix string, from, to time.Time, inside func(day time.Time) bool) ([]history.UTCDay, error) {
	var days []history.UTCDay
	err := readTx(ctx, s.db, func(tx *sql.Tx) error {
		var err error
		days, err = historyDaysIn(ctx, tx, name, prefix, from, to, inside)
		return err
	})
	if err != nil && counters.ErrorCode(err) != counters.ENOTFOUND {
		return nil, mapError("storage.HistoryDays", err, false)
	}
	return days, err
}

// historyDaysIn reads history's days inside tx, whose snapshot it shares
// with the caller's other reads (breakdowns read history and labels in
// one): the days of counter_history, the slots, and the rolled-up months.
func historyDaysIn(ctx context.Context, tx *sql.Tx, name, prefix string, from, to time.Time, inside func(day time.Time) bool) ([]history.UTCDay, error) {
	var rows *sql.Rows
	var err error
	if name != "" {
		rows, err = tx.QueryContext(ctx, historyOfName, name, from.Format(time.DateOnly), to.Format(time.DateOnly),
			name, quarterNumber(from), quarterNumber(to))
	} else {
		cond, days := dayRange(from, to)
		like := likePrefix(prefix)
		rows, err = tx.QueryContext(ctx, fmt.Sprintf(historyOfPrefix, cond), append(days, like, like, quarterNumber(from), quarterNumber(to))...)
	}
	if err != nil {
		return nil, err
	}
	days, err := scanHistory(rows)
	if err != nil {
		return nil, err
	}
	if days, err = addRolledUp(ctx, tx, days, name, prefix, from, to, inside); err != nil {
		return nil, err
	}
	if len(days) > 0 || name == "" {
		return days, nil
	}
	var known bool
	err = tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM counter WHERE name = ?) OR EXISTS (SELECT 1 FROM counter_history WHERE name = ?)"+
		" OR EXISTS (SELECT 1 FROM counter_history_month WHERE name = ?)", name, name, name).Scan(&known)
	if err != nil {
		return nil, err
	}
	if !known {
		return nil, counters.Errorf(counters.ENOTFOUND, "Counter not found: it has neither a value nor history.")
	}
	return days, nil
}

// dayRange is the condition on a day column that selects the UTC days
// [from, to), and its arguments: the days one by one (see maxDayList), so
// that a (day, name) key reads a prefix's names of each day as one range.
func dayRange(from, to time.Time) (string, []any) {
	var days []any
	for d := from; d.Before(to) && len(days) <= maxDayList; d = d.AddDate(0, 0, 1) {
		days = append(days, d.Format(time.DateOnly))
	}
	if len(days) > maxDayList {
		return "day >= ? AND day < ?", []any{from.Format(time.DateOnly), to.Format(time.DateOnly)}
	}
	return "day IN (" + placeholders("?", ", ", len(days)) + ")", days
}

// readTx runs fn in a read-only REPEATABLE READ transaction: its
// statements read one snapshot, whatever the server's default level.
func readTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) error {
	return txWith(ctx, db, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}, fn)
}

// addRolledUp adds the rolled-up days in [from, to) of the counter name or,
// when name is empty, of the counters under prefix, to days (in order of
// day), and returns them in order. A segment's sum counts in its first
// quarter hour, which every period of a day or month step that holds that
// quarter holds whole: the segment lies between two history.Boundaries.
//
// With inside, a day for which inside is false comes as its total in its
// first quarter hour.
func addRolledUp(ctx context.Context, tx *sql.Tx, days []history.UTCDay, name, prefix string, from, to time.Time, inside func(day time.Time) bool) ([]history.UTCDay, error) {
	var rows *sql.Rows
	var err error
	if name != "" {
		rows, err = tx.QueryContext(ctx, "SELECT month, days FROM counter_history_month WHERE name = ? AND month >= ? AND month < ?",
			name, monthOf(from).Format(time.DateOnly), to.Format(time.DateOnly))
	} else {
		months := monthsIn(from, to)
		rows, err = tx.QueryContext(ctx, "SELECT month, days FROM counter_history_month WHERE month IN ("+placeholders("?", ", ", len(months))+
			") AND name LIKE ? ESCAPE '!'", append(months, likePrefix(prefix))...)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// The days of [from, to) by their number from from: a prefix's year
	// adds 365 days of each counter, and a slice is much quicker than a map.
	n := int(to.Sub(from) / (24 * time.Hour))
	byDay := make([]*history.UTCDay, n)
	for i := range days {
		if k := int(days[i].Date.Sub(from) / (24 * time.Hour)); k >= 0 && k < n {
			byDay[k] = &days[i]
		}
	}
	// inside, asked once per day here and not once per counter and day.
	var cut []bool
	if inside != nil {
		cut = make([]bool, n)
		for k := range cut {
			cut[k] = inside(from.AddDate(0, 0, k))
		}
	}
	var added []*history.UTCDay
	beyond := counters.Errorf(counters.EOUTOFRANGE, "A quarter hour of this history holds a count beyond the signed 64-bit range.")
	add := func(d *history.UTCDay, q int, n int64) error {
		var ok bool
		if d.Quarters[q], ok = counters.Add(d.Quarters[q], n); !ok {
			return beyond
		}
		return nil
	}
	var packed sql.RawBytes // read in place: a prefix's year is 12 rows of each counter
	for rows.Next() {
		var month time.Time
		if err := rows.Scan(&month, &packed); err != nil {
			return nil, err
		}
		first := int(month.Sub(from) / (24 * time.Hour)) // may be negative
		var want func(day int) bool
		if cut != nil {
			want = func(day int) bool { k := first + day; return k >= 0 && k < n && cut[k] }
		}
		err := walkDays(packed, want, func(day int, full bool, total int64, figs []int64) error {
			k := first + day
			if k < 0 || k >= n {
				return nil
			}
			d := byDay[k]
			if d == nil {
				d = &history.UTCDay{Date: month.AddDate(0, 0, day)}
				byDay[k] = d
				added = append(added, d)
			}
			if figs == nil {
				return add(d, 0, total)
			}
			for i, f := range figs {
				if f == 0 {
					continue
				}
				q := i
				if !full {
					q = history.Boundaries[i]
				}
				if err := add(d, q, f); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(added) == 0 {
		return days, nil
	}
	for _, d := range added {
		days = append(days, *d)
	}
	slices.SortFunc(days, func(a, b history.UTCDay) int { return a.Date.Compare(b.Date) })
	return days, nil
}

// scanHistory reads rows of a day and its 96 quarters (DECIMAL, as text;
// NULL where nothing happened), in order of day, and closes them. Rows of
// the same day are added up.
func scanHistory(rows *sql.Rows) ([]history.UTCDay, error) {
	defer rows.Close()
	var days []history.UTCDay
	cells := make([]sql.RawBytes, history.QuartersPerDay)
	dest := make([]any, 1+history.QuartersPerDay)
	for i := range cells {
		dest[i+1] = &cells[i]
	}
	beyond := counters.Errorf(counters.EOUTOFRANGE, "A quarter hour of this history holds a count beyond the signed 64-bit range.")
	for rows.Next() {
		var date time.Time
		dest[0] = &date
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if len(days) == 0 || !days[len(days)-1].Date.Equal(date) {
			days = append(days, history.UTCDay{Date: date})
		}
		d := &days[len(days)-1]
		for q, c := range cells {
			if c == nil {
				continue
			}
			n, err := strconv.ParseInt(string(c), 10, 64)
			if err != nil {
				return nil, beyond
			}
			sum, ok := counters.Add(d.Quarters[q], n)
			if !ok {
				return nil, beyond
			}
			d.Quarters[q] = sum
		}
	}
	return days, rows.Err()
}
