package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"countersvc/counters"
	"countersvc/history"
)

var _ history.Store = (*CounterStore)(nil)

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

var (
	historyOfName = "SELECT day, " + quarterColumns(false) +
		" FROM counter_history WHERE name = ? AND day >= ? AND day < ? ORDER BY day"
	historyOfPrefix = "SELECT day, " + quarterColumns(true) +
		" FROM counter_history WHERE %s AND name LIKE ? ESCAPE '!' GROUP BY day ORDER BY day"
)

// maxDayList is the most days a prefix's read names one by one: each is
// then one range of the (day, name) key, the names under the prefix on that
// day. A longer range reads every name of its days and filters them.
const maxDayList = 1000

// HistoryDays implements history.Store. A counter's days are one range of
// the primary key; a prefix's days are summed by MySQL, day by day.
func (s *CounterStore) HistoryDays(ctx context.Context, name, prefix string, from, to time.Time) ([]history.UTCDay, error) {
	var rows *sql.Rows
	var err error
	if name != "" {
		rows, err = s.db.QueryContext(ctx, historyOfName, name, from.Format(time.DateOnly), to.Format(time.DateOnly))
	} else {
		var days []any
		for d := from; d.Before(to) && len(days) <= maxDayList; d = d.AddDate(0, 0, 1) {
			days = append(days, d.Format(time.DateOnly))
		}
		cond := "day >= ? AND day < ?"
		if len(days) <= maxDayList {
			cond = "day IN (" + placeholders("?", ", ", len(days)) + ")"
		} else {
			days = []any{from.Format(time.DateOnly), to.Format(time.DateOnly)}
		}
		rows, err = s.db.QueryContext(ctx, fmt.Sprintf(historyOfPrefix, cond), append(days, likePrefix(prefix))...)
	}
	if err != nil {
		return nil, mapError("storage.HistoryDays", err, false)
	}
	days, err := scanHistory(rows)
	if err != nil {
		return nil, mapError("storage.HistoryDays", err, false)
	}
	if len(days) == 0 && name != "" {
		var known bool
		err := s.db.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM counter WHERE name = ?) OR EXISTS (SELECT 1 FROM counter_history WHERE name = ?)",
			name, name).Scan(&known)
		if err != nil {
			return nil, mapError("storage.HistoryDays", err, false)
		}
		if !known {
			return nil, counters.Errorf(counters.ENOTFOUND, "Counter not found: it has neither a value nor history.")
		}
	}
	return days, nil
}

// scanHistory reads rows of a day and its 96 quarters (DECIMAL, as text;
// NULL where nothing happened) and closes them.
func scanHistory(rows *sql.Rows) ([]history.UTCDay, error) {
	defer rows.Close()
	var days []history.UTCDay
	cells := make([]sql.RawBytes, history.QuartersPerDay)
	dest := make([]any, 1+history.QuartersPerDay)
	for i := range cells {
		dest[i+1] = &cells[i]
	}
	for rows.Next() {
		var d history.UTCDay
		dest[0] = &d.Date
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		for q, c := range cells {
			if c == nil {
				continue
			}
			n, err := strconv.ParseInt(string(c), 10, 64)
			if err != nil {
				return nil, counters.Errorf(counters.EOUTOFRANGE, "A quarter hour of this history holds a count beyond the signed 64-bit range.")
			}
			d.Quarters[q] = n
		}
		days = append(days, d)
	}
	return days, rows.Err()
}
