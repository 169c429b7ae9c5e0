package storage

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"

	"github.com/countersvc/countersvc/internal/batch"
	"github.com/countersvc/countersvc/internal/deadline"
	"github.com/countersvc/countersvc/tickets"
)

const (
	// maxGroupBytes keeps a multi-row INSERT far below any server's
	// max_allowed_packet (4 MiB on MySQL 5.7, 16 MiB on MariaDB 10.11) even
	// when escaping doubles the text.
	maxGroupBytes = 1 << 20
)

// ticketInserter is a group commit for ticket rows, on internal/batch's
// queue. Callers queue their row and wait; one goroutine at a time writes
// what queued while the previous statement was in flight as one group, one
// multi-row INSERT, so N concurrent creations cost one commit instead of N.
// A lone row is written at once: there is no timer. A caller is answered
// only after the statement holding its row committed, or failed for
// certain: a caller whose context ends once its row was taken waits for
// the statement, whose own deadline is the latest of its callers', so that
// the answer is never a guess; a row still queued is dropped ("nothing was
// changed").
type ticketInserter struct {
	db        *sql.DB
	maxRows   int
	returning bool // INSERT ... RETURNING hands back rows (see supportsReturning)

	q            *batch.Queue[*tickets.Ticket, struct{}]
	groups, rows atomic.Int64
}

type queuedTicket = batch.Call[*tickets.Ticket, struct{}]

func newTicketInserter(db *sql.DB, maxRows int, returning bool) *ticketInserter {
	g := &ticketInserter{db: db, maxRows: maxRows, returning: returning}
	g.q = batch.New(func(group []*queuedTicket, _ bool) { g.flush(group) },
		batch.Options[*tickets.Ticket, struct{}]{WaitSent: true, Choose: g.chooser})
	return g
}

// insert writes t and sets t.ID.
func (g *ticketInserter) insert(ctx context.Context, t *tickets.Ticket) error {
	_, err := g.q.Do(ctx, t)
	var u *batch.Unanswered
	if errors.As(err, &u) {
		return mapError("storage.CreateTicket", u.Err, false)
	}
	return err
}

func (g *ticketInserter) stats() InsertStats {
	return InsertStats{Groups: g.groups.Load(), Rows: g.rows.Load(), Queued: g.q.Len()}
}

// chooser picks the next group: up to maxRows rows and maxGroupBytes of text.
func (g *ticketInserter) chooser() func(*tickets.Ticket) batch.Verdict {
	rows, size := 0, 0
	return func(t *tickets.Ticket) batch.Verdict {
		rowSize := len(t.Title) + len(t.Description) + 64
		if rows == g.maxRows || rows > 0 && size+rowSize > maxGroupBytes {
			return batch.Stop
		}
		rows++
		size += rowSize
		return batch.Take
	}
}

// flush writes one group and answers its callers. A group that collided
// with concurrent work (a deadlock, or on Galera a lost certification) was
// rolled back whole and is written again (see retry). When MySQL refuses the
// multi-row statement (a server error: nothing of it was written), one bad
// row must not fail the others, so each row is retried on its own and its
// caller gets its own answer. When the connection fails instead, retrying
// row by row would only wait on a dead server: every caller gets 503, saying
// whether the rows may have been committed.
func (g *ticketInserter) flush(group []*queuedTicket) {
	ctx, cancel := deadline.Latest(group, func(q *queuedTicket) context.Context { return q.Ctx })
	defer cancel()
	g.groups.Add(1)
	g.rows.Add(int64(len(group)))

	var err error
	ambiguous := false
	if len(group) == 1 {
		err = g.insertOne(ctx, group[0].Req)
	} else {
		write := g.insertThenRead
		if g.returning {
			write = g.insertReturning
		}
		err = retry(ctx, "storage.CreateTicket", func() (err error) {
			ambiguous, err = write(ctx, group)
			return err
		})
	}
	// A statement that collided with concurrent work until the time ran
	// out (retryable) was not refused: its rows were fine.
	refused := mysqlErrNumber(err) != 0 && !ambiguous && !retryable(err)
	for _, q := range group {
		switch {
		case err == nil || len(group) == 1:
			q.Answer(struct{}{}, err)
		case refused:
			q.Answer(struct{}{}, g.insertOne(ctx, q.Req))
		default:
			q.Answer(struct{}{}, mapError("storage.CreateTicket", err, ambiguous))
		}
	}
}
