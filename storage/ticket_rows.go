package storage

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/tickets"
)

// erNoReferencedRow2 is a foreign key without its parent: the board of a
// ticket does not exist.
const erNoReferencedRow2 = 1452

const insertTicketSQL = "INSERT INTO ticket (board_id, local_id, title, description, created_at) VALUES "

// ticketRow is the placeholders of one row of insertTicketSQL.
const ticketRow = "(?, ?, ?, ?, ?)"

// insertOne writes one row in autocommit mode: one round trip, and the id
// comes back in the OK packet.
func (g *ticketInserter) insertOne(ctx context.Context, t *tickets.Ticket) error {
	res, err := execRetried(ctx, g.db, "storage.CreateTicket", insertTicketSQL+ticketRow,
		t.BoardID, t.LocalID, t.Title, t.Description, t.CreatedAt)
	if err != nil {
		return ticketRowError(err, t)
	}
	t.ID, err = res.LastInsertId()
	return mapError("storage.CreateTicket", err, true)
}

// The ids of a multi-row insert: the OK packet gives only the first, and the
// ids of one statement are not promised to be consecutive (auto-increment
// lock mode 2, auto_increment_increment), so they are read, never guessed.
// Both ways below report ambiguous when the outcome is unknown (the
// connection failed while the rows may have been committed); after any
// other error nothing was written.

// insertReturning writes the group with INSERT ... RETURNING: one
// autocommit round trip that answers with the ids.
func (g *ticketInserter) insertReturning(ctx context.Context, group []*queuedTicket) (ambiguous bool, err error) {
	query, args := multiRowInsert(group)
	rows, err := g.db.QueryContext(ctx, query+" RETURNING board_id, local_id, id", args...)
	if err != nil {
		return mysqlErrNumber(err) == 0, err
	}
	ids, err := scanTicketIDs(rows, len(group))
	if err != nil {
		return mysqlErrNumber(err) == 0, err
	}
	setTicketIDs(group, ids)
	return false, nil
}

// insertThenRead writes the group and reads the ids back in one
// transaction, for servers without RETURNING (MySQL). Inside it no one can
// delete the rows before they are read.
func (g *ticketInserter) insertThenRead(ctx context.Context, group []*queuedTicket) (ambiguous bool, err error) {
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	query, args := multiRowInsert(group)
	if _, err := tx.ExecContext(ctx, query, args...); err != nil {
		return false, err
	}
	query, args = selectTicketIDs(group)
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return false, err
	}
	ids, err := scanTicketIDs(rows, len(group))
	if err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return mysqlErrNumber(err) == 0, err
	}
	setTicketIDs(group, ids)
	return false, nil
}

func multiRowInsert(group []*queuedTicket) (string, []any) {
	args := make([]any, 0, 5*len(group))
	for _, q := range group {
		args = append(args, q.Req.BoardID, q.Req.LocalID, q.Req.Title, q.Req.Description, q.Req.CreatedAt)
	}
	return insertTicketSQL + placeholders(ticketRow, ", ", len(group)), args
}

// selectTicketIDs reads the ids of the group's rows, one condition per
// board so that each is a range on the (board_id, local_id) key.
func selectTicketIDs(group []*queuedTicket) (string, []any) {
	byBoard := map[int64][]int64{}
	var boards []int64
	for _, q := range group {
		if _, ok := byBoard[q.Req.BoardID]; !ok {
			boards = append(boards, q.Req.BoardID)
		}
		byBoard[q.Req.BoardID] = append(byBoard[q.Req.BoardID], q.Req.LocalID)
	}
	var sb strings.Builder
	sb.WriteString("SELECT board_id, local_id, id FROM ticket WHERE ")
	args := make([]any, 0, len(group)+len(boards))
	for i, b := range boards {
		if i > 0 {
			sb.WriteString(" OR ")
		}
		locals := byBoard[b]
		sb.WriteString("(board_id = ? AND local_id IN (" + placeholders("?", ", ", len(locals)) + "))")
		args = append(args, b)
		for _, l := range locals {
			args = append(args, l)
		}
	}
	return sb.String(), args
}

type ticketRef struct{ board, local int64 }

// scanTicketIDs reads (board_id, local_id, id) rows and closes them.
func scanTicketIDs(rows *sql.Rows, want int) (map[ticketRef]int64, error) {
	defer rows.Close()
	ids := make(map[ticketRef]int64, want)
	for rows.Next() {
		var r ticketRef
		var id int64
		if err := rows.Scan(&r.board, &r.local, &id); err != nil {
			return nil, err
		}
		ids[r] = id
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(ids) != want {
		return nil, fmt.Errorf("read %d ticket ids for %d rows", len(ids), want)
	}
	return ids, nil
}

func setTicketIDs(group []*queuedTicket, ids map[ticketRef]int64) {
	for _, q := range group {
		q.Req.ID = ids[ticketRef{q.Req.BoardID, q.Req.LocalID}]
	}
}

// ticketRowError gives a failed insert of t its domain meaning.
func ticketRowError(err error, t *tickets.Ticket) error {
	switch mysqlErrNumber(err) {
	case erDupEntry:
		return counters.Wrap(counters.ECONFLICT, "storage.CreateTicket", err,
			fmt.Sprintf("Ticket number %d of board %d is already in use.", t.LocalID, t.BoardID))
	case erNoReferencedRow2:
		return counters.Wrap(counters.ENOTFOUND, "storage.CreateTicket", err, fmt.Sprintf("Board %d not found.", t.BoardID))
	}
	return mapError("storage.CreateTicket", err, true)
}
