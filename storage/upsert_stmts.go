package storage

import (
	"context"
	"database/sql"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"countersvc/counters"
)

// upsertSizes are the row counts of the prepared multi-counter upserts. An
// increment of n counters is padded up to the next one, so a handful of
// statements serve every n: each is prepared once per connection that runs
// it, and a statement per exact size could leave thousands on the server.
var upsertSizes = []int{2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128}

// upsertReturningSQL is the multi-counter upsert of rows rows, each
// (name, by, now, now), with the bounds check of incrementSQL.
func upsertReturningSQL(rows int) string {
	var q strings.Builder
	q.WriteString("INSERT INTO counter (name, value, created_at, updated_at) VALUES ")
	q.WriteString(placeholders("(?, ?, ?, ?)", ", ", rows))
	q.WriteString(upsertManyUpdate)
	q.WriteString(newerThanStored("VALUES(updated_at)"))
	q.WriteString("\nRETURNING name, value")
	return q.String()
}

// upsertManyUpdate is the update clause of the multi-counter upserts, with
// the bounds check of incrementSQL; the new updated_at follows it.
const upsertManyUpdate = ` ON DUPLICATE KEY UPDATE
		value = IF((min_value IS NULL OR value + VALUES(value) >= min_value) AND (max_value IS NULL OR value + VALUES(value) <= max_value),
		           value + VALUES(value), NULL),
		updated_at = `

// preparedUpserts holds the prepared INSERT ... RETURNING statements by row
// count. Prepared, a statement is parsed once per connection instead of on
// every run, and parsing is a large part of the server's work per row of
// this upsert.
type preparedUpserts struct {
	db *sql.DB

	mu     sync.Mutex
	bySize map[int]*sql.Stmt
	closed bool
}

func newPreparedUpserts(db *sql.DB) *preparedUpserts {
	return &preparedUpserts{db: db, bySize: map[int]*sql.Stmt{}}
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

func (p *preparedUpserts) stmt(ctx context.Context, size int) (*sql.Stmt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errStoreClosed
	}
	if st := p.bySize[size]; st != nil {
		return st, nil
	}
	st, err := p.db.PrepareContext(ctx, upsertReturningSQL(size))
	if err != nil {
		return nil, err
	}
	p.bySize[size] = st
	return st, nil
}

// query runs the upsert of sorted (name order, distinct names, at most the
// largest size). The padding rows repeat the last counter with a step of 0:
// they change nothing, pass its bounds whenever its own row did, and read
// back the value its own row left.
func (p *preparedUpserts) query(ctx context.Context, sorted []counters.Increment, now time.Time) (*sql.Rows, error) {
	size := paddedSize(len(sorted))
	st, err := p.stmt(ctx, size)
	if err != nil {
		return nil, err
	}
	args := make([]any, 0, 4*size)
	at := any(now) // boxed once, not twice a row
	for _, d := range sorted {
		args = append(args, d.Name, d.By, at, at)
	}
	last := sorted[len(sorted)-1].Name
	for range size - len(sorted) {
		args = append(args, last, int64(0), at, at)
	}
	return st.QueryContext(ctx, args...)
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
