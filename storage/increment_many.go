package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sort"
	"strings"
	"time"

	"countersvc/counters"
)

var _ counters.MultiIncrementer = (*CounterStore)(nil)

// IncrementMany implements counters.MultiIncrementer: one multi-row upsert
// and one read of the new values, in one transaction sent in one round trip,
// so that many counters share one commit. Rows are written in name order, so two such
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
	var q strings.Builder
	// The time goes once into a session variable rather than twice per row.
	q.WriteString("SET @counters_now = ?;\nSTART TRANSACTION;\nINSERT INTO counter (name, value, created_at, updated_at) VALUES ")
	args := make([]any, 0, 1+len(sorted)*3)
	args = append(args, now)
	for i, d := range sorted {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?, @counters_now, @counters_now)")
		args = append(args, d.Name, d.By)
	}
	q.WriteString(` ON DUPLICATE KEY UPDATE
		value = IF((min_value IS NULL OR value + VALUES(value) >= min_value) AND (max_value IS NULL OR value + VALUES(value) <= max_value),
		           value + VALUES(value), NULL),
		updated_at = @counters_now;
SELECT name, value FROM counter WHERE name IN (`)
	q.WriteString(placeholders(len(sorted)))
	q.WriteString(");\nCOMMIT")
	for _, d := range sorted {
		args = append(args, d.Name)
	}

	// One connection for the whole exchange: if a statement fails, the
	// server skips the rest and the transaction is still open on it.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, q.String(), args...)
	if err != nil {
		rollback(conn)
		return nil, err
	}
	// The rows are locked by this transaction until its COMMIT, so what it
	// reads back is exactly what its own upsert produced.
	values, err := scanResultSets(rows)
	if err != nil {
		rollback(conn)
		return nil, err
	}
	return values, nil
}

// rollback ends a transaction left open by a failed multi-statement
// exchange. If even that fails the connection is unusable: Raw's error
// makes database/sql discard it instead of handing it to the next caller.
func rollback(conn *sql.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// scanResultSets reads the name/value rows of a multi-statement exchange,
// walking through the result sets of the statements around the SELECT; an
// error of any statement (the COMMIT's too) surfaces here.
func scanResultSets(rows *sql.Rows) (map[string]int64, error) {
	defer rows.Close()
	values := map[string]int64{}
	for {
		for rows.Next() {
			var name string
			var v int64
			if err := rows.Scan(&name, &v); err != nil {
				return nil, err
			}
			values[name] = v
		}
		if !rows.NextResultSet() {
			break
		}
	}
	return values, rows.Err()
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
