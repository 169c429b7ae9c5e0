package storage

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/countersvc/countersvc/history"
)

// The roll-up (history.Rollup, migrations/011_history_rollup.up.sql):
// counter_history's rows of past days move into one packed row per
// counter and month. Each batch is one transaction that reads the rows it
// moves with locks, merges them into their months' rows and deletes them,
// so that a batch that stops anywhere (MySQL killed, a deadline) leaves
// every day in exactly one place; reads take both tables from one snapshot
// (history_read.go). READ COMMITTED: the locking reads then lock only the
// rows they return, never today's rows that increments write.

var _ history.Roller = (*HistoryStore)(nil)

// monthOf is the first day of day's UTC month.
func monthOf(day time.Time) time.Time {
	return time.Date(day.Year(), day.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// monthsIn are the months that [from, to) touches, as the arguments of
// the month rows' keys.
func monthsIn(from, to time.Time) []any {
	var months []any
	for m := monthOf(from); m.Before(to); m = m.AddDate(0, 1, 0) {
		months = append(months, m.Format(time.DateOnly))
	}
	return months
}

// monthKey names a month row.
type monthKey struct {
	name  string
	month time.Time
}

// monthRow is a month row's days, in order, and whether it is stored yet.
type monthRow struct {
	days   []packedDay
	stored bool
}

// add merges d into the row; false, and the row unchanged, when a figure
// of the sum leaves int64.
func (m *monthRow) add(d packedDay) bool {
	i, found := slices.BinarySearchFunc(m.days, d.day, func(e packedDay, day int) int { return e.day - day })
	if _, fits := d.total(); !fits {
		return false
	}
	if !found {
		m.days = slices.Insert(m.days, i, d)
		return true
	}
	sum, ok := m.days[i].plus(d)
	if _, fits := sum.total(); ok && fits {
		m.days[i] = sum
		return true
	}
	return false
}

// RollupDays implements history.Roller.
func (s *HistoryStore) RollupDays(ctx context.Context, before, thin time.Time, after history.RollupPosition, limit int) (int64, history.RollupPosition, error) {
	var seen int64
	next := after
	err := inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		seen, next = 0, after
		rows, err := tx.QueryContext(ctx, "SELECT name, day, "+quarterColumns(false)+
			" FROM counter_history WHERE (name > ? OR (name = ? AND day > ?)) AND day < ? ORDER BY name, day LIMIT ? FOR UPDATE",
			after.Name, after.Name, after.Day.Format(time.DateOnly), before.Format(time.DateOnly), limit)
		if err != nil {
			return err
		}
		type detail struct {
			key monthKey
			day time.Time
			d   packedDay
		}
		var moving []detail
		cells := make([]sql.RawBytes, history.QuartersPerDay)
		dest := make([]any, 2+history.QuartersPerDay)
		for i := range cells {
			dest[i+2] = &cells[i]
		}
	scan:
		for rows.Next() {
			var name []byte
			var day time.Time
			dest[0], dest[1] = &name, &day
			if err := rows.Scan(dest...); err != nil {
				rows.Close()
				return err
			}
			seen++
			next = history.RollupPosition{Name: string(name), Day: day}
			d := packedDay{day: day.Day() - 1, full: true, figs: make([]int64, history.QuartersPerDay)}
			for q, c := range cells {
				if c == nil {
					continue
				}
				n, err := strconv.ParseInt(string(c), 10, 64)
				if err != nil {
					continue scan // beyond int64: the day stays as it is, where reads say so
				}
				d.figs[q] = n
			}
			if day.Before(thin) {
				t, ok := d.thinned()
				if !ok {
					continue // a segment beyond int64: the day stays as it is
				}
				d = t
			}
			moving = append(moving, detail{monthKey{string(name), monthOf(day)}, day, d})
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if len(moving) == 0 {
			return nil
		}
		keys := make([]monthKey, 0, len(moving))
		for _, m := range moving {
			if len(keys) == 0 || keys[len(keys)-1] != m.key {
				keys = append(keys, m.key)
			}
		}
		months, err := lockMonths(ctx, tx, keys)
		if err != nil {
			return err
		}
		var moved []any
		for _, m := range moving {
			if months[m.key].add(m.d) {
				moved = append(moved, m.key.name, m.day.Format(time.DateOnly))
			}
		}
		if err := storeMonths(ctx, tx, keys, months); err != nil {
			return err
		}
		return deleteMoved(ctx, tx, moved, int(seen), after, next, before)
	})
	if err != nil {
		return 0, after, mapError("storage.RollupDays", err, true)
	}
	return seen, next, nil
}

// errRaced says a day was written into a batch's range while it moved: the
// batch rolls back, and the next one reads that day too.
var errRaced = errors.New("storage: a day of history was written into the range a roll-up was moving; it goes back and tries again")

// deleteMoved deletes the rows that a batch moved, moved being their names
// and days, of seen rows it read in (after, last]. When it moved them all
// it deletes the range, as one range of the primary key: an OR of 2,000
// (name, day) pairs measured 700 ms in MariaDB's range optimizer alone.
// The read took no gap locks (READ COMMITTED), so a row written into the
// range since (a slot moved into an old day) would go too: the count
// tells, and the batch then rolls back. Rows it kept (beyond int64) are
// named one by one.
func deleteMoved(ctx context.Context, tx *sql.Tx, moved []any, seen int, after, last history.RollupPosition, before time.Time) error {
	if len(moved) == 0 {
		return nil
	}
	if len(moved)/2 < seen {
		_, err := tx.ExecContext(ctx, "DELETE FROM counter_history WHERE "+placeholders("(name = ? AND day = ?)", " OR ", len(moved)/2), moved...)
		return err
	}
	res, err := tx.ExecContext(ctx, "DELETE FROM counter_history WHERE (name > ? OR (name = ? AND day > ?)) AND (name < ? OR (name = ? AND day <= ?)) AND day < ?",
		after.Name, after.Name, after.Day.Format(time.DateOnly), last.Name, last.Name, last.Day.Format(time.DateOnly), before.Format(time.DateOnly))
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(seen) {
		return cmp.Or(err, errRaced)
	}
	return nil
}

// ThinDays implements history.Roller.
func (s *HistoryStore) ThinDays(ctx context.Context, thin time.Time, limit int) (int64, error) {
	var n int64
	err := inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		n = 0
		rows, err := tx.QueryContext(ctx, "SELECT name, month, days FROM counter_history_month WHERE full_from < ? ORDER BY full_from LIMIT ? FOR UPDATE",
			thin.Format(time.DateOnly), limit)
		if err != nil {
			return err
		}
		months, keys, err := scanMonths(rows)
		if err != nil {
			return err
		}
		for _, k := range keys {
			m := months[k]
			for i, d := range m.days {
				if d.full && k.month.AddDate(0, 0, d.day).Before(thin) {
					if t, ok := d.thinned(); ok {
						m.days[i] = t
					}
				}
			}
		}
		n = int64(len(keys))
		return storeMonths(ctx, tx, keys, months)
	})
	return n, mapError("storage.ThinDays", err, true)
}

// lockMonths reads the month rows of keys, locked, and gives every key a
// row, stored or new.
func lockMonths(ctx context.Context, tx *sql.Tx, keys []monthKey) (map[monthKey]*monthRow, error) {
	args := make([]any, 0, 2*len(keys))
	for _, k := range keys {
		args = append(args, k.name, k.month.Format(time.DateOnly))
	}
	rows, err := tx.QueryContext(ctx, "SELECT name, month, days FROM counter_history_month WHERE "+
		placeholders("(name = ? AND month = ?)", " OR ", len(keys))+" FOR UPDATE", args...)
	if err != nil {
		return nil, err
	}
	months, _, err := scanMonths(rows)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if months[k] == nil {
			months[k] = &monthRow{}
		}
	}
	return months, nil
}

// scanMonths reads rows of name, month and days, and closes them.
func scanMonths(rows *sql.Rows) (map[monthKey]*monthRow, []monthKey, error) {
	defer rows.Close()
	months := map[monthKey]*monthRow{}
	var keys []monthKey
	for rows.Next() {
		var name, packed []byte
		var month time.Time
		if err := rows.Scan(&name, &month, &packed); err != nil {
			return nil, nil, err
		}
		days, err := unpackDays(packed)
		if err != nil {
			return nil, nil, err
		}
		k := monthKey{string(name), month}
		months[k] = &monthRow{days: days, stored: true}
		keys = append(keys, k)
	}
	return months, keys, rows.Err()
}

// storeMonths writes the month rows of keys: the new ones by INSERT, so
// that two roll-ups that both found a month missing cannot both write it
// (the second fails and its transaction rolls back, to be retried), the
// stored ones, which the transaction has locked, by replacing them.
func storeMonths(ctx context.Context, tx *sql.Tx, keys []monthKey, months map[monthKey]*monthRow) error {
	const cols = "INSERT INTO counter_history_month (name, month, total, first_day, full_from, days) VALUES "
	var fresh, stored []any
	for _, k := range keys {
		m := months[k]
		if len(m.days) == 0 {
			continue
		}
		total, fullFrom := new(big.Int), sql.NullString{}
		for _, d := range m.days {
			for _, f := range d.figs {
				total.Add(total, big.NewInt(f))
			}
			if _, ok := d.thinned(); d.full && ok && !fullFrom.Valid {
				fullFrom = sql.NullString{String: k.month.AddDate(0, 0, d.day).Format(time.DateOnly), Valid: true}
			}
		}
		row := []any{k.name, k.month.Format(time.DateOnly), total.String(), k.month.AddDate(0, 0, m.days[0].day).Format(time.DateOnly),
			fullFrom, packDays(nil, m.days)}
		if m.stored {
			stored = append(stored, row...)
		} else {
			fresh = append(fresh, row...)
		}
	}
	const row = "(?, ?, ?, ?, ?, ?)"
	if len(fresh) > 0 {
		if _, err := tx.ExecContext(ctx, cols+placeholders(row, ", ", len(fresh)/6), fresh...); err != nil {
			return err
		}
	}
	if len(stored) > 0 {
		_, err := tx.ExecContext(ctx, cols+placeholders(row, ", ", len(stored)/6)+
			" ON DUPLICATE KEY UPDATE total = VALUES(total), first_day = VALUES(first_day), full_from = VALUES(full_from), days = VALUES(days)", stored...)
		return err
	}
	return nil
}
