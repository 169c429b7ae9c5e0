package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// IncrementMany implements counters.Store: one multi-row upsert
// for all the counters, so that they share one commit, and their new values
// read back in the same round trip. Rows are written in name order, so two
// such writes lock in the same order and cannot deadlock each other; a
// deadlock with some other writer is retried. The bounds check is the one of
// the single-counter statement: NULL into NOT NULL fails the whole statement.
// Both ways of writing are atomic, so a deadlock left nothing changed.
//
// With history, the counters' history is written in the same transaction,
// sent in the same round trip (see incrementManyInTx).
func (s *CounterStore) IncrementMany(ctx context.Context, deltas []counters.Increment) ([]int64, error) {
	const op = "storage.IncrementMany"
	sorted := make([]counters.Increment, len(deltas))
	copy(sorted, deltas)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })

	recorded := slices.ContainsFunc(sorted, func(d counters.Increment) bool { return s.seam.recorded(d.Name) })
	// What a tally counts goes the transactional way, its rows after the
	// counters', unless the labels' slot in the counter's row takes all of
	// it.
	ts := &s.seam.tallies
	labelled := ts.counted(sorted, nil)
	slotted := !labelled || !ts.counted(sorted, ts.labels)
	var values map[string]int64
	var now time.Time
	err := retry(ctx, op, func() (err error) {
		now = s.now()
		// The slot takes a round whose steps all count in the quarter of
		// the store's clock, as the coalescer's rounds do but at a
		// quarter's turn.
		slot := s.History && s.Returning && !recorded && slotted && inQuarterOf(sorted, now)
		switch {
		case slot:
			values, err = s.incrementManySlot(ctx, sorted, now, labelled)
		case recorded || labelled || !s.Returning || s.History:
			values, err = s.incrementManyInTx(ctx, sorted, now, recorded)
		default:
			values, err = s.upserts.returning(ctx, sorted, now, false, nil, ts.labels.slotSize())
		}
		return err
	})
	if err != nil {
		return nil, mapError(op, err, true)
	}
	out := make([]int64, len(deltas))
	for i, d := range deltas {
		v, ok := values[d.Name]
		if !ok {
			return nil, counters.Errorf(counters.EINTERNAL, "counter %q missing after its upsert", d.Name)
		}
		out[i] = v
	}
	s.seam.committed(ctx, manyChanges(sorted, values, now))
	return out, nil
}

// inQuarterOf says whether every step of incs counts in the quarter hour
// of now: those without parts do, as do parts that queued in it.
func inQuarterOf(incs []counters.Increment, now time.Time) bool {
	q := now.Truncate(counters.HistoryGrain)
	return !slices.ContainsFunc(incs, func(d counters.Increment) bool {
		return slices.ContainsFunc(d.Parts, func(p counters.Part) bool { return !p.At.Truncate(counters.HistoryGrain).Equal(q) })
	})
}

// manyChanges are the changes of sorted's increments, which took their
// counters to values.
func manyChanges(sorted []counters.Increment, values map[string]int64, now time.Time) []counters.Change {
	changes := make([]counters.Change, len(sorted))
	for i, d := range sorted {
		changes[i] = incrementChange(d, values[d.Name], now)
	}
	return changes
}

// upsertMany is the multi-row upsert of sorted, after a statement that puts
// the time (and with slot the quarter, see history_write.go) once into
// session variables rather than into every row, and then begin. With
// labels (one per row of sorted, see labelSlots) it also appends each
// row's labels to its counter's label slot (see labels_write.go), whose
// size is slotSize.
func upsertMany(begin string, sorted []counters.Increment, now time.Time, slot bool, labels []slotLabels, slotSize int) (*strings.Builder, []any) {
	q := &strings.Builder{}
	q.Grow(200 + 40*len(sorted))
	args := make([]any, 0, 2+len(sorted)*5)
	if slot {
		q.WriteString("SET @counters_now = ?, @counters_quarter = ?;\n")
		args = append(args, now, quarterNumber(now))
	} else {
		q.WriteString("SET @counters_now = ?;\n")
		args = append(args, now)
	}
	q.WriteString(begin)
	row := "(?, ?, @counters_now, @counters_now"
	if slot {
		row += ", @counters_quarter, ?"
	}
	if labels != nil {
		row += ", ?, ?"
	}
	row += ")"
	q.WriteString(upsertManyHead(slot, labels != nil))
	q.WriteString(placeholders(row, ", ", len(sorted)))
	for i, d := range sorted {
		args = append(args, d.Name, d.By)
		if slot {
			args = append(args, d.By)
		}
		if labels != nil {
			args = append(args, labels[i].day, labels[i].adds)
		}
	}
	if labels != nil {
		args = append(args, slotSize)
	}
	q.WriteString(upsertManyUpdate(slot, labels != nil))
	q.WriteString(newerThanStored("@counters_now"))
	return q, args
}

// incrementManySlot is preparedUpserts.returning with history in the
// counters' slots and, labelled, their labels in the label slots: one
// statement either way. When it refuses a step, a bound, a slot holding
// another quarter or a label slot that is full or holds another day
// refused it: the slots are moved (see flushSlots; incrementManyInTx
// moves the label slots) and the round written the other writers' way,
// which reports a bound's refusal exactly.
func (s *CounterStore) incrementManySlot(ctx context.Context, sorted []counters.Increment, now time.Time, labelled bool) (map[string]int64, error) {
	size := s.seam.tallies.labels.slotSize()
	// movingSlots is incrementManyInTx, which moves the label slots of the
	// counters it labels out.
	movingSlots := func(labels []slotLabels) (map[string]int64, error) {
		s.slots.moving(sorted, labels)
		return s.incrementManyInTx(ctx, sorted, now, false)
	}
	var labels []slotLabels
	if labelled {
		labels = labelSlots(sorted, now)
		if !s.slots.reserve(sorted, labels, size) {
			return movingSlots(labels)
		}
	}
	values, err := s.upserts.returning(ctx, sorted, now, true, labels, size)
	s.slots.done(sorted, labels, err == nil)
	if err == nil {
		return values, nil
	}
	names := make([]string, len(sorted))
	for i, d := range sorted {
		names[i] = d.Name
	}
	if again, err := s.history.refused(ctx, err, true, now, names...); !again {
		return nil, err
	}
	return movingSlots(labels)
}

// incrementManyInTx is IncrementMany in a transaction sent in one round
// trip (three or four where a transaction may not be one exchange, see
// Exchanges): the upsert, its new values (by RETURNING, or for servers
// without it a SELECT) and, with history and labels, their writes (see
// tallies.counts), then COMMIT. The history rows are locked after the
// counters' rows, in the same order. When recorded, a recorder wants
// some of the counters: the COMMIT then follows the recorders, once the
// values are read.
func (s *CounterStore) incrementManyInTx(ctx context.Context, sorted []counters.Increment, now time.Time, recorded bool) (map[string]int64, error) {
	q, args := upsertMany("START TRANSACTION;\n", sorted, now, false, nil, 0)
	var rest []statement
	if s.Returning {
		q.WriteString("\nRETURNING name, value")
	} else {
		rest = append(rest, selectValues(sorted))
	}
	rest = append(rest, s.seam.tallies.counts(manyChanges(sorted, nil, now))...)
	first, rest := exchangeOf(s.Exchanges, statement{q.String(), args}, rest, !recorded)

	var values map[string]int64
	err := exchange(ctx, s.db, func(conn *sql.Conn) error {
		rows, err := conn.QueryContext(ctx, first.query, first.args...)
		if err != nil {
			return err
		}
		// The rows are locked by this transaction until its COMMIT, so
		// what it reads back is exactly what its own upsert produced.
		if values, err = scanResultSets(rows); err != nil {
			return err
		}
		if err := sendEach(ctx, conn, rest, values); err != nil || !recorded {
			return err
		}
		return s.seam.commitRecorded(ctx, conn, manyChanges(sorted, values, now))
	})
	return values, err
}

// selectValues reads back the values of sorted's counters, for servers
// without RETURNING; the caller's transaction holds their rows' locks.
func selectValues(sorted []counters.Increment) statement {
	names := make([]any, len(sorted))
	for i, d := range sorted {
		names[i] = d.Name
	}
	return statement{"SELECT name, value FROM counter WHERE name IN (" + placeholders("?", ", ", len(sorted)) + ")", names}
}

// statement is one SQL statement and its arguments.
type statement struct {
	query string
	args  []any
}

// exchangeOf completes a transaction whose first round trip is first, a
// write that ends it: with rest and COMMIT in the same exchange where the
// server allows (exchanges, the store's Exchanges), else with nothing, leaving rest and
// COMMIT for sendEach, a round trip each. So on a Galera node no statement
// follows a write in one exchange: an abort after the write is reported
// by the next round trip, where in the same exchange the statements after
// it would run on regardless. Without commit the caller ends the
// transaction itself (see commitRecorded).
func exchangeOf(exchanges bool, first statement, rest []statement, commit bool) (statement, []statement) {
	if commit {
		rest = append(rest, statement{query: "COMMIT"})
	}
	if !exchanges {
		return first, rest
	}
	for _, st := range rest {
		first.query += ";\n" + st.query
		first.args = append(first.args, st.args...)
	}
	return first, nil
}

// sendEach sends each of rest on conn in a round trip of its own, adding
// the name/value rows any of them reads to values.
func sendEach(ctx context.Context, conn *sql.Conn, rest []statement, values map[string]int64) error {
	for _, st := range rest {
		rows, err := conn.QueryContext(ctx, st.query, st.args...)
		if err != nil {
			return err
		}
		read, err := scanResultSets(rows)
		if err != nil {
			return err
		}
		maps.Copy(values, read)
	}
	return nil
}

// exchange runs fn, which sends a transaction as one multi-statement
// exchange, on one connection of db's pool: if a statement fails, the
// server skips the rest and the transaction is still open on that
// connection, so exchange rolls it back when fn fails.
func exchange(ctx context.Context, db *sql.DB, fn func(conn *sql.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := fn(conn); err != nil {
		rollback(conn)
		return err
	}
	return nil
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
