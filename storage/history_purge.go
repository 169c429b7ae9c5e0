package storage

import (
	"context"
	"time"

	"github.com/countersvc/countersvc/history"
)

var _ history.Purger = (*HistoryStore)(nil)

// PurgeHistory implements history.Purger: first the label counts of the
// days before before (migrations/012), then counter_history's rows of
// those days, then the visitor sketches of those days, then
// the slots (migrations/009) of counters idle since then, at most limit
// in all. The first two are ranges of their (day, name) keys, from the
// oldest day. A slot is cleared by its counter's primary key, found by a
// read that takes no locks, and only while it still holds a quarter before
// the horizon: an increment meanwhile moved it on, and it stays.
func (s *HistoryStore) PurgeHistory(ctx context.Context, before time.Time, limit int) (int64, error) {
	day := before.Format(time.DateOnly)
	var total int64
	for _, q := range []string{
		"DELETE FROM counter_label WHERE day < ? ORDER BY day LIMIT ?", // first: a read of such a day never finds labels beyond its history
		"DELETE FROM counter_history WHERE day < ? ORDER BY day, name LIMIT ?",
		"DELETE FROM visitor_sketch WHERE day < ? ORDER BY day, name LIMIT ?",
	} {
		res, err := s.db.ExecContext(ctx, q, day, limit-int(total))
		if err != nil {
			return total, mapError("storage.PurgeHistory", err, true)
		}
		n, _ := res.RowsAffected()
		if total += n; total >= int64(limit) {
			return total, nil
		}
	}
	n, err := s.purgeSlots(ctx, quarterNumber(before), limit-int(total))
	return total + n, err
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
