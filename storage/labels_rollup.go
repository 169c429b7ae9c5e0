package storage

import (
	"context"
	"database/sql"
	"encoding/binary"
	"math/big"
	"slices"
	"strconv"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// Rolled-up labels (migrations/013): a label's value of a counter keeps
// one row per UTC month, its days packed (packLabelDays), once the days
// are old enough that no write still lands in them: a 30-day breakdown of
// a prefix then reads a row per value and month, not per value and day.
// Reads add the month rows' days in range to the daily rows, so a day
// counts once whether it moved yet or not; the move is one transaction.
// The bound was decided when the days were settled; a pending row of a
// day already moved (none is written that late) would be settled against
// that day's daily rows alone.

// labelMonthKey names a month row of counter_label_month.
type labelMonthKey struct {
	name, label string
	month       time.Time
	value       string
}

// packLabelDays packs a month row's days: for each day with a count, in
// order, its index in the month (a uvarint) and its count (a varint). It
// also returns the first day's index (31 when there is none), which
// retention selects rows to trim by.
func packLabelDays(days map[int]int64) ([]byte, int) {
	b := make([]byte, 0, len(days)*(1+binary.MaxVarintLen64))
	first := 31
	for d := range 31 {
		if n, ok := days[d]; ok && n != 0 {
			first = min(first, d)
			b = binary.AppendUvarint(b, uint64(d))
			b = binary.AppendVarint(b, n)
		}
	}
	return b, first
}

// unpackLabelDays calls fn with each day of a month row: its index in
// the month and its count.
func unpackLabelDays(b []byte, fn func(day int, n int64)) error {
	for len(b) > 0 {
		d, k := binary.Uvarint(b)
		if k <= 0 || d > 30 {
			return counters.Errorf(counters.EINTERNAL, "storage: a label month row is not packed as packLabelDays packs")
		}
		b = b[k:]
		n, k := binary.Varint(b)
		if k <= 0 {
			return counters.Errorf(counters.EINTERNAL, "storage: a label month row is not packed as packLabelDays packs")
		}
		b = b[k:]
		fn(int(d), n)
	}
	return nil
}

// RollupLabels implements breakdowns.Settler: it moves at most limit
// daily label rows of days before before into their month rows, in one
// READ COMMITTED transaction that locks what it moves, and returns how
// many. A row whose count does not fit in an int64 stays daily.
func (s *BreakdownStore) RollupLabels(ctx context.Context, before time.Time, limit int) (int, error) {
	const op = "storage.RollupLabels"
	var n int
	err := retry(ctx, op, func() error {
		return inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
			n = 0
			rows, err := tx.QueryContext(ctx, "SELECT name, label, day, value, count FROM counter_label WHERE day < ? ORDER BY day, label, name, value LIMIT "+
				strconv.Itoa(limit)+" FOR UPDATE", before.Format(time.DateOnly))
			if err != nil {
				return err
			}
			months := map[labelMonthKey]map[int]int64{}
			var moved []any
			for rows.Next() {
				var k labelMonthKey
				var day time.Time
				var raw sql.RawBytes
				if err := rows.Scan(&k.name, &k.label, &day, &k.value, &raw); err != nil {
					rows.Close()
					return err
				}
				count, err := strconv.ParseInt(string(raw), 10, 64)
				if err != nil {
					continue // beyond int64: it stays a daily row
				}
				k.month = monthOf(day)
				if months[k] == nil {
					months[k] = map[int]int64{}
				}
				months[k][day.Day()-1] += count
				moved = append(moved, k.name, k.label, day.Format(time.DateOnly), k.value)
			}
			if err := rows.Close(); err != nil || len(moved) == 0 {
				return err
			}
			if err := mergeLabelMonths(ctx, tx, months); err != nil {
				return err
			}
			for part := range slices.Chunk(moved, 4*500) {
				if _, err := tx.ExecContext(ctx, "DELETE FROM counter_label WHERE (name, label, day, value) IN ("+
					placeholders("(?, ?, ?, ?)", ", ", len(part)/4)+")", part...); err != nil {
					return err
				}
			}
			n = len(moved) / 4
			return nil
		})
	})
	return n, mapError(op, err, true)
}

// mergeLabelMonths adds months' days to their month rows, locking those
// that exist first. Two days of one value that add past an int64 cannot
// happen here: each is a day's count, and a month's day holds one.
func mergeLabelMonths(ctx context.Context, tx *sql.Tx, months map[labelMonthKey]map[int]int64) error {
	var keys []any
	for k := range months {
		keys = append(keys, k.name, k.label, k.month.Format(time.DateOnly), k.value)
	}
	for part := range slices.Chunk(keys, 4*500) {
		rows, err := tx.QueryContext(ctx, "SELECT name, label, month, value, days FROM counter_label_month WHERE (name, label, month, value) IN ("+
			placeholders("(?, ?, ?, ?)", ", ", len(part)/4)+") FOR UPDATE", part...)
		if err != nil {
			return err
		}
		for rows.Next() {
			var k labelMonthKey
			var days []byte
			if err := rows.Scan(&k.name, &k.label, &k.month, &k.value, &days); err != nil {
				rows.Close()
				return err
			}
			err := unpackLabelDays(days, func(d int, n int64) { months[k][d] += n })
			if err != nil {
				rows.Close()
				return err
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
	}
	var rows []any
	for k, days := range months {
		packed, first := packLabelDays(days)
		rows = append(rows, k.name, k.label, k.month.Format(time.DateOnly), k.value, first, packed)
	}
	for part := range slices.Chunk(rows, 6*500) {
		if _, err := tx.ExecContext(ctx, "INSERT INTO counter_label_month (name, label, month, value, first_day, days) VALUES "+
			placeholders("(?, ?, ?, ?, ?, ?)", ", ", len(part)/6)+" ON DUPLICATE KEY UPDATE first_day = VALUES(first_day), days = VALUES(days)", part...); err != nil {
			return err
		}
	}
	return nil
}

// addLabelMonths adds to sums the days in [from, to) of the month rows of
// label, of the counter name or, when name is empty, of the counters
// under prefix.
func addLabelMonths(ctx context.Context, tx *sql.Tx, sums map[string]*big.Int, name, prefix, label string, from, to time.Time) error {
	months := monthsIn(from, to)
	in := placeholders("?", ", ", len(months))
	var rows *sql.Rows
	var err error
	if name != "" {
		rows, err = tx.QueryContext(ctx, "SELECT value, month, days FROM counter_label_month WHERE name = ? AND label = ? AND month IN ("+in+")",
			append([]any{name, label}, months...)...)
	} else {
		rows, err = tx.QueryContext(ctx, "SELECT value, month, days FROM counter_label_month WHERE label = ? AND month IN ("+in+") AND name LIKE ? ESCAPE '!'",
			append(append([]any{label}, months...), likePrefix(prefix))...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var value string
		var month time.Time
		var days sql.RawBytes
		if err := rows.Scan(&value, &month, &days); err != nil {
			return err
		}
		err := unpackLabelDays(days, func(d int, n int64) {
			if day := month.AddDate(0, 0, d); !day.Before(from) && day.Before(to) {
				addSum(sums, value, n)
			}
		})
		if err != nil {
			return err
		}
	}
	return rows.Err()
}

// trimLabelMonths removes from at most limit month rows of the month that
// holds before the days before it (retention), deleting a row left empty.
func trimLabelMonths(ctx context.Context, db *sql.DB, before time.Time, limit int) (int64, error) {
	var n int64
	err := inTx(ctx, db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		n = 0
		rows, err := tx.QueryContext(ctx, "SELECT name, label, value, days FROM counter_label_month WHERE month = ? AND first_day < ? LIMIT ? FOR UPDATE",
			monthOf(before).Format(time.DateOnly), before.Day()-1, limit)
		if err != nil {
			return err
		}
		type row struct {
			k    labelMonthKey
			days map[int]int64
			cut  bool
		}
		var trimmed []row
		for rows.Next() {
			r := row{days: map[int]int64{}}
			var days []byte
			if err := rows.Scan(&r.k.name, &r.k.label, &r.k.value, &days); err != nil {
				rows.Close()
				return err
			}
			err := unpackLabelDays(days, func(d int, c int64) {
				if d < before.Day()-1 {
					r.cut = true
				} else {
					r.days[d] = c
				}
			})
			if err != nil {
				rows.Close()
				return err
			}
			if r.cut {
				trimmed = append(trimmed, r)
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
		month := monthOf(before).Format(time.DateOnly)
		for _, r := range trimmed {
			packed, first := packLabelDays(r.days)
			q, args := "UPDATE counter_label_month SET first_day = ?, days = ? WHERE name = ? AND label = ? AND month = ? AND value = ?",
				[]any{first, packed, r.k.name, r.k.label, month, r.k.value}
			if len(packed) == 0 {
				q, args = "DELETE FROM counter_label_month WHERE name = ? AND label = ? AND month = ? AND value = ?", args[2:]
			}
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, mapError("storage.PurgeHistory", err, true)
}
