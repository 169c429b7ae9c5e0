package storage

import (
	"context"
	"database/sql"
	"sort"
	"strings"

	"countersvc/counters"
)

var _ counters.MultiIncrementer = (*CounterStore)(nil)

// IncrementMany implements counters.MultiIncrementer: one multi-row upsert
// and one read of the new values, in one transaction, so that many counters
// share one commit. Rows are written in name order, so two such
// transactions lock in the same order and cannot deadlock each other; a
// deadlock with some other writer is retried. The bounds check is the one of
// the single-counter statement: NULL into NOT NULL fails the whole statement.
func (s *CounterStore) IncrementMany(ctx context.Context, deltas []counters.Delta) ([]int64, error) {
	sorted := make([]counters.Delta, len(deltas))
	copy(sorted, deltas)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	var values map[string]int64
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		values, err = s.incrementMany(ctx, sorted)
		if !isRetryable(err) {
			break
		}
	}
	if err != nil {
		return nil, mapError("storage.IncrementMany", err, true)
	}
	out := make([]int64, len(deltas))
	for i, d := range deltas {
		v, ok := values[d.Name]
		if !ok {
			return nil, counters.Errorf(counters.EINTERNAL, "counter %q missing after its upsert", d.Name)
		}
		out[i] = v
	}
	return out, nil
}

func (s *CounterStore) incrementMany(ctx context.Context, sorted []counters.Delta) (map[string]int64, error) {
	now := s.now()
	var upsert strings.Builder
	upsert.WriteString("INSERT INTO counter (name, value, created_at, updated_at) VALUES ")
	args := make([]any, 0, len(sorted)*4)
	in := make([]any, 0, len(sorted))
	for i, d := range sorted {
		if i > 0 {
			upsert.WriteString(", ")
		}
		upsert.WriteString("(?, ?, ?, ?)")
		args = append(args, d.Name, d.By, now, now)
		in = append(in, d.Name)
	}
	upsert.WriteString(` ON DUPLICATE KEY UPDATE
		value = IF((min_value IS NULL OR value + VALUES(value) >= min_value) AND (max_value IS NULL OR value + VALUES(value) <= max_value),
		           value + VALUES(value), NULL),
		updated_at = VALUES(updated_at)`)

	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, upsert.String(), args...); err != nil {
		return nil, err
	}
	// The rows are locked by this transaction, so what it reads back is
	// exactly what its own upsert produced.
	rows, err := tx.QueryContext(ctx, "SELECT name, value FROM counter WHERE name IN ("+placeholders(len(in))+")", in...)
	if err != nil {
		return nil, err
	}
	values, err := scanValues(rows)
	if err != nil {
		return nil, err
	}
	return values, tx.Commit()
}

func scanValues(rows *sql.Rows) (map[string]int64, error) {
	defer rows.Close()
	values := map[string]int64{}
	for rows.Next() {
		var name string
		var v int64
		if err := rows.Scan(&name, &v); err != nil {
			return nil, err
		}
		values[name] = v
	}
	return values, rows.Err()
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
