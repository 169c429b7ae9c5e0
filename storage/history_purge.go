package storage

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/countersvc/countersvc/history"
)

var _ history.Purger = (*HistoryStore)(nil)

// PurgeHistory implements history.Purger: what each of the store's
// tallies kept of the days before before (Tally.purges), the last
// registered first: the labels' (migrations/012 and 013), then history's
// own (counter_history's rows of those days, the rolled-up months of
// migrations/011 that end by then, the days before before of the month
// that holds it, the slots of migrations/009 of counters idle since
// then), then the visitor sketches of those days, at most limit in all.
// The day and month rows go as ranges of their keys, from the oldest
// day. A slot is cleared by its counter's primary key, found by a read
// that takes no locks, and only while it still holds a quarter before the
// horizon: an increment meanwhile moved it on, and it stays.
func (s *HistoryStore) PurgeHistory(ctx context.Context, before time.Time, limit int) (int64, error) {
	// The tallies last registered first: labels before history, so that
	// a read of such a day never finds labels beyond its history.
	var steps []func(limit int) (int64, error)
	for _, t := range slices.Backward(s.tallies) {
		steps = append(steps, t.purges(ctx, s.db, before)...)
	}
	steps = append(steps, deleting(ctx, s.db, "DELETE FROM visitor_sketch WHERE day < ? ORDER BY day, name LIMIT ?", before.Format(time.DateOnly)))
	var total int64
	for _, step := range steps {
		n, err := step(limit - int(total))
		if total += n; err != nil || total >= int64(limit) {
			return total, err
		}
	}
	return total, nil
}

// deleting is a step of PurgeHistory: stmt, with until and the step's
// limit.
func deleting(ctx context.Context, db *sql.DB, stmt, until string) func(int) (int64, error) {
	return func(limit int) (int64, error) {
		res, err := db.ExecContext(ctx, stmt, until, limit)
		if err != nil {
			return 0, mapError("storage.PurgeHistory", err, true)
		}
		return res.RowsAffected()
	}
}

// purgeSlots clears at most limit slots that hold a quarter before keep.
func (s *HistoryStore) purgeSlots(ctx context.Context, keep int64, limit int) (int64, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT name FROM counter WHERE history_quarter < ? LIMIT ?", keep, limit)
	if err != nil {
		return 0, mapError("storage.PurgeHistory", err, false)
	}
	var names []any
	for rows.Next() {
		var name []byte
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return 0, mapError("storage.PurgeHistory", err, false)
		}
		names = append(names, name)
	}
	if err := rows.Close(); err != nil {
		return 0, mapError("storage.PurgeHistory", err, false)
	}
	if len(names) == 0 {
		return 0, nil
	}
	res, err := s.db.ExecContext(ctx, "UPDATE counter SET history_quarter = NULL, history_sum = NULL WHERE name IN ("+
		placeholders("?", ", ", len(names))+") AND history_quarter < ?", append(names, keep)...)
	if err != nil {
		return 0, mapError("storage.PurgeHistory", err, true)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

// trimMonths removes the days before before from at most limit month rows
// of before's month, each row rewritten (or deleted, when nothing is left)
// in the transaction that locked it, as the roll-up writes them.
func (s *HistoryStore) trimMonths(ctx context.Context, before time.Time, limit int) (int64, error) {
	var n int64
	err := inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
		n = 0
		rows, err := tx.QueryContext(ctx, "SELECT name, month, days FROM counter_history_month WHERE month = ? AND first_day < ? LIMIT ? FOR UPDATE",
			monthOf(before).Format(time.DateOnly), before.Format(time.DateOnly), limit)
		if err != nil {
			return err
		}
		months, keys, err := scanMonths(rows)
		if err != nil || len(keys) == 0 {
			return err
		}
		var empty []any
		for _, k := range keys {
			m := months[k]
			m.days = slices.DeleteFunc(m.days, func(d packedDay) bool { return k.month.AddDate(0, 0, d.day).Before(before) })
			if len(m.days) == 0 {
				empty = append(empty, k.name, k.month.Format(time.DateOnly))
			}
		}
		n = int64(len(keys))
		if len(empty) > 0 {
			_, err := tx.ExecContext(ctx, "DELETE FROM counter_history_month WHERE "+placeholders("(name = ? AND month = ?)", " OR ", len(empty)/2), empty...)
			if err != nil {
				return err
			}
		}
		return storeMonths(ctx, tx, keys, months)
	})
	return n, mapError("storage.PurgeHistory", err, true)
}
