package storage

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// upsertSizes are the row counts of the prepared multi-counter upserts. An
// increment of n counters is padded up to the next one, so a handful of
// statements serve every n: each is prepared once per connection that runs
// it, and a statement per exact size could leave thousands on the server.
// One counter (a hot counter's labelled round) has a statement of its own
// (upsertOneSQL): a padding row updates its counter's row a second time
// (its updated_at moves on), and with it the label slot the row carries,
// so the server wrote that row, its undo and its redo twice a round.
var upsertSizes = []int{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128}

// upsertReturningSQL is the multi-counter upsert of rows rows, each
// (name, by, now, now), or with slot (name, by, now, now, quarter, by),
// with the bounds check of incrementSQL; with labels (slot too) each row
// also has its label day and adds, and the label slot's size follows the
// rows (see labelSlotFree).
func upsertReturningSQL(rows int, slot, labels bool) string {
	var q strings.Builder
	row := "(?, ?, ?, ?)"
	if slot {
		row = "(?, ?, ?, ?, ?, ?)"
	}
	if labels {
		row = "(?, ?, ?, ?, ?, ?, ?, ?)"
	}
	q.WriteString(upsertManyHead(slot, labels))
	q.WriteString(placeholders(row, ", ", rows))
	q.WriteString(upsertManyUpdate(slot, labels))
	q.WriteString(newerThanStored("VALUES(updated_at)"))
	q.WriteString("\nRETURNING name, value")
	return q.String()
}

// upsertManyHead begins the multi-counter upserts, up to their rows; with
// labels (slot too) it names the label slot's columns.
func upsertManyHead(slot, labels bool) string {
	cols := ""
	if slot {
		cols = slotColumns
	}
	if labels {
		cols += labelSlotColumns
	}
	return "INSERT INTO counter (name, value, created_at, updated_at" + cols + ") VALUES "
}

// upsertManyUpdate is the update clause of the multi-counter upserts, with
// the bounds check of incrementSQL, with slot the slot's (see
// history_write.go) and with labels the label slot's (labels_write.go);
// the new updated_at follows it.
func upsertManyUpdate(slot, labels bool) string {
	return upsertUpdate(slot, labels, "value + VALUES(value)")
}

// upsertUpdate is upsertManyUpdate with sum, the new value's expression.
func upsertUpdate(slot, labels bool, sum string) string {
	free, update := "", ""
	if slot {
		free, update = " AND "+slotFree, slotUpdate
	}
	if labels {
		free, update = free+" AND "+labelSlotFree, update+labelSlotUpdate
	}
	return ` ON DUPLICATE KEY UPDATE
		value = IF((min_value IS NULL OR value + VALUES(value) >= min_value) AND (max_value IS NULL OR value + VALUES(value) <= max_value)` + free + `,
		           ` + sum + `, NULL),` + update + `
		updated_at = `
}

// upsertOneSQL is upsertReturningSQL of one row, whose new value comes
// back as incrementSQL's does, in the OK packet (LAST_INSERT_ID), not
// as a result set: the row's value is its step (VALUES(value)) and
// LAST_INSERT_ID the value it leaves, inserted or updated. The driver
// then reads one packet, and the server sends no columns and no row.
// Parameters as upsertReturningSQL's of one row.
func upsertOneSQL(slot, labels bool) string {
	row := "(?, CAST(LAST_INSERT_ID(?) AS SIGNED), ?, ?)"
	if slot {
		row = "(?, CAST(LAST_INSERT_ID(?) AS SIGNED), ?, ?, ?, ?)"
	}
	if labels {
		row = "(?, CAST(LAST_INSERT_ID(?) AS SIGNED), ?, ?, ?, ?, ?, ?)"
	}
	return upsertManyHead(slot, labels) + row + upsertUpdate(slot, labels, "CAST(LAST_INSERT_ID(value + VALUES(value)) AS SIGNED)") +
		newerThanStored("VALUES(updated_at)")
}

// preparedUpserts holds the prepared INSERT ... RETURNING statements by row
// count. Prepared, a statement is parsed once per connection instead of on
// every run, and parsing is a large part of the server's work per row of
// this upsert.
type preparedUpserts struct {
	db *sql.DB

	mu     sync.Mutex
	bySize map[upsertShape]*sql.Stmt
	closed bool
}

// upsertShape tells the prepared upserts apart: their row count, and
// whether they add to the slot and to the label slot.
type upsertShape struct {
	rows         int
	slot, labels bool
}

func newPreparedUpserts(db *sql.DB) *preparedUpserts {
	return &preparedUpserts{db: db, bySize: map[upsertShape]*sql.Stmt{}}
}

// paddedSize is the row count of the statement that carries n rows, or 0
// when n is larger than any.
func paddedSize(n int) int {
	i := sort.SearchInts(upsertSizes, n)
	if i == len(upsertSizes) {
		return 0
	}
	return upsertSizes[i]
}

var errStoreClosed = errors.New("storage: counter store closed")

func (p *preparedUpserts) stmt(ctx context.Context, shape upsertShape) (*sql.Stmt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errStoreClosed
	}
	if st := p.bySize[shape]; st != nil {
		return st, nil
	}
	q := upsertReturningSQL(shape.rows, shape.slot, shape.labels)
	if shape.rows == 1 {
		q = upsertOneSQL(shape.slot, shape.labels)
	}
	st, err := p.db.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	p.bySize[shape] = st
	return st, nil
}

// query runs the upsert of sorted (name order, distinct names, at most the
// largest size), with slot adding the steps to the slots of the quarter of
// now, and with labels (one per row, slot too) their labels to label
// slots of size bytes. The padding rows repeat the last counter with a
// step of 0 and no labels: they change nothing, pass its bounds whenever
// its own row did, leave its slots alone, and read back the value its own
// row left.
func (p *preparedUpserts) query(ctx context.Context, sorted []counters.Increment, now time.Time, slot bool, labels []slotLabels, size int) (*sql.Rows, error) {
	rows := paddedSize(len(sorted))
	st, err := p.stmt(ctx, upsertShape{rows, slot, labels != nil})
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, upsertArgs(sorted, rows, now, slot, labels, size)...)
}

// one is the upsert of one counter's row (upsertOneSQL), as query's of
// one row, and its new value.
func (p *preparedUpserts) one(ctx context.Context, d counters.Increment, now time.Time, slot bool, labels []slotLabels, size int) (map[string]int64, error) {
	st, err := p.stmt(ctx, upsertShape{1, slot, labels != nil})
	if err != nil {
		return nil, err
	}
	res, err := st.ExecContext(ctx, upsertArgs([]counters.Increment{d}, 1, now, slot, labels, size)...)
	if err != nil {
		return nil, err
	}
	v, err := res.LastInsertId()
	if err != nil {
		return nil, err
	}
	return map[string]int64{d.Name: v}, nil
}

// upsertArgs are the arguments of the prepared upsert of rows rows that
// carries sorted (see query).
func upsertArgs(sorted []counters.Increment, rows int, now time.Time, slot bool, labels []slotLabels, size int) []any {
	perRow := 4
	if slot {
		perRow = 6
	}
	if labels != nil {
		perRow = 8
	}
	args := make([]any, 0, perRow*rows+1)
	at := any(now) // boxed once, not twice a row
	quarter := any(quarterNumber(now))
	zero := any(int64(0))
	add := func(name string, by any, l slotLabels) {
		args = append(args, name, by, at, at)
		if slot {
			args = append(args, quarter, by)
		}
		if labels != nil {
			args = append(args, l.day, l.adds)
		}
	}
	for i, d := range sorted {
		var l slotLabels
		if labels != nil {
			l = labels[i]
		}
		add(d.Name, d.By, l)
	}
	last := sorted[len(sorted)-1].Name
	for range rows - len(sorted) {
		add(last, zero, slotLabels{})
	}
	if labels != nil {
		args = append(args, size)
	}
	return args
}

func (p *preparedUpserts) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	var errs []error
	for _, st := range p.bySize {
		errs = append(errs, st.Close())
	}
	clear(p.bySize)
	return errors.Join(errs...)
}

// returning is the upsert of sorted as one statement, atomic on its own:
// RETURNING hands back each row as the upsert left it, and a refused row
// rolls the whole statement back, so no transaction is left open to clean
// up. The server also finds each row once, where an upsert and a SELECT
// find it twice. With slot it adds the steps to the counters' history
// slots, and with labels their labels to the label slots of size
// slotSize. A round of one counter (a hot counter's) reads its value
// from the OK packet instead (one); a round of more rows than the largest
// prepared size is sent as text.
func (p *preparedUpserts) returning(ctx context.Context, sorted []counters.Increment, now time.Time, slot bool, labels []slotLabels, slotSize int) (map[string]int64, error) {
	if len(sorted) == 1 {
		return p.one(ctx, sorted[0], now, slot, labels, slotSize)
	}
	var rows *sql.Rows
	var err error
	if paddedSize(len(sorted)) > 0 {
		rows, err = p.query(ctx, sorted, now, slot, labels, slotSize)
	} else {
		q, args := upsertMany("", sorted, now, slot, labels, slotSize)
		q.WriteString("\nRETURNING name, value")
		rows, err = p.db.QueryContext(ctx, q.String(), args...)
	}
	if err != nil {
		return nil, err
	}
	return scanResultSets(rows)
}
