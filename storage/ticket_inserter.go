package storage

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"countersvc/internal/deadline"
	"countersvc/tickets"
)

const (
	// maxGroupBytes keeps a multi-row INSERT far below any server's
	// max_allowed_packet (4 MiB on MySQL 5.7, 16 MiB on MariaDB 10.11) even
	// when escaping doubles the text.
	maxGroupBytes = 1 << 20
)

// ticketInserter is a group commit for ticket rows. Callers queue their row
// and wait; one goroutine at a time writes what queued while the previous
// statement was in flight as one group, one multi-row INSERT, so N
// concurrent creations cost one commit instead of N. A lone row is written at once:
// there is no timer. A caller is answered only after the statement holding
// its row committed, or failed for certain.
type ticketInserter struct {
	db        *sql.DB
	maxRows   int
	returning bool // INSERT ... RETURNING hands back rows (see supportsReturning)

	mu      sync.Mutex
	queue   []*queuedTicket
	running bool // a goroutine is draining the queue

	groups, rows atomic.Int64
}

// States of a queued ticket. The caller may abandon it only while it is
// still queued; once taken, its answer is the statement's.
const (
	queued int32 = iota
	taken
	abandoned
)

type queuedTicket struct {
	ctx   context.Context
	t     *tickets.Ticket
	state atomic.Int32
	err   error
	done  chan struct{}
}

func newTicketInserter(db *sql.DB, maxRows int, returning bool) *ticketInserter {
	return &ticketInserter{db: db, maxRows: maxRows, returning: returning}
}

// insert writes t and sets t.ID. When ctx ends first, the row is dropped if
// it was still queued ("nothing was changed"); if it was already being
// written, insert waits for the statement, whose own deadline is the latest
// of its callers', so that the answer is never a guess.
func (g *ticketInserter) insert(ctx context.Context, t *tickets.Ticket) error {
	q := &queuedTicket{ctx: ctx, t: t, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, q)
	if !g.running {
		g.running = true
		go g.drain()
	}
	g.mu.Unlock()

	select {
	case <-q.done:
	case <-ctx.Done():
		if q.state.CompareAndSwap(queued, abandoned) {
			return mapError("storage.CreateTicket", ctx.Err(), false)
		}
		<-q.done
	}
	return q.err
}

func (g *ticketInserter) stats() InsertStats {
	g.mu.Lock()
	n := len(g.queue)
	g.mu.Unlock()
	return InsertStats{Groups: g.groups.Load(), Rows: g.rows.Load(), Queued: n}
}

// drain writes groups until the queue is empty, then ends: an idle
// inserter has no goroutine and needs no Close.
func (g *ticketInserter) drain() {
	for {
		group := g.take()
		if group == nil {
			return
		}
		g.flush(group)
	}
}

// take removes the next group from the queue: up to maxRows rows and
// maxGroupBytes of text, skipping rows whose callers gave up. It returns
// nil, and marks the inserter idle, when nothing is left.
func (g *ticketInserter) take() []*queuedTicket {
	g.mu.Lock()
	defer g.mu.Unlock()
	var group []*queuedTicket
	size, i := 0, 0
	for ; i < len(g.queue) && len(group) < g.maxRows; i++ {
		q := g.queue[i]
		rowSize := len(q.t.Title) + len(q.t.Description) + 64
		if len(group) > 0 && size+rowSize > maxGroupBytes {
			break
		}
		if !q.state.CompareAndSwap(queued, taken) {
			continue // abandoned: its caller already answered
		}
		if err := q.ctx.Err(); err != nil {
			q.err = mapError("storage.CreateTicket", err, false)
			close(q.done)
			continue
		}
		size += rowSize
		group = append(group, q)
	}
	n := copy(g.queue, g.queue[i:])
	clear(g.queue[n:])
	g.queue = g.queue[:n]
	if len(group) == 0 && n == 0 {
		g.running = false
		return nil
	}
	return group
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
	ctx, cancel := deadline.Latest(group, func(q *queuedTicket) context.Context { return q.ctx })
	defer cancel()
	g.groups.Add(1)
	g.rows.Add(int64(len(group)))

	var err error
	ambiguous := false
	if len(group) == 1 {
		err = g.insertOne(ctx, group[0].t)
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
			q.err = err
		case refused:
			q.err = g.insertOne(ctx, q.t)
		default:
			q.err = mapError("storage.CreateTicket", err, ambiguous)
		}
		close(q.done)
	}
}
