package storage

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/tickets"
)

const ticketColumns = "id, board_id, local_id, title, description, created_at"

// TicketStore implements tickets.Store on MySQL. Ticket inserts go through
// a group commit (see ticketInserter); everything else is one statement.
type TicketStore struct {
	db  *sql.DB
	ins *ticketInserter
	Now func() time.Time // injectable clock
}

var _ tickets.Store = (*TicketStore)(nil)

// TicketStoreOptions tune the group commit of ticket inserts.
type TicketStoreOptions struct {
	// MaxGroupRows is the most ticket rows one group, one INSERT, carries;
	// default 100.
	MaxGroupRows int
	// WithoutReturning reads the ids of a multi-row insert back in a
	// transaction, as on servers without INSERT ... RETURNING (MySQL), even
	// where RETURNING works. For tests of that path.
	WithoutReturning bool
}

// NewTicketStore returns a store on db, whose tables Open has migrated.
func NewTicketStore(db *DB, o TicketStoreOptions) *TicketStore {
	if o.MaxGroupRows <= 0 {
		o.MaxGroupRows = 100
	}
	returning := db.returning && !o.WithoutReturning
	return &TicketStore{db: db.DB, ins: newTicketInserter(db.DB, o.MaxGroupRows, returning), Now: time.Now}
}

// InsertStats says how ticket inserts were grouped: Rows tickets were
// written in Groups, one INSERT statement each, and Queued wait for the
// next one.
type InsertStats struct {
	Groups, Rows int64
	Queued       int
}

// InsertStats reports the group commit's work so far.
func (s *TicketStore) InsertStats() InsertStats { return s.ins.stats() }

func (s *TicketStore) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

// CreateBoard implements tickets.Store.
func (s *TicketStore) CreateBoard(ctx context.Context, b *tickets.Board) error {
	b.CreatedAt = s.now()
	res, err := execRetried(ctx, s.db, "storage.CreateBoard", "INSERT INTO board (company_id, slug, title, created_at) VALUES (?, ?, ?, ?)",
		b.CompanyID, b.Slug, b.Title, b.CreatedAt)
	if isDuplicate(err) {
		return counters.Errorf(counters.ECONFLICT, "Company %d already has a board %s.", b.CompanyID, b.Slug)
	} else if err != nil {
		return mapError("storage.CreateBoard", err, true)
	}
	b.ID, err = res.LastInsertId()
	return mapError("storage.CreateBoard", err, true)
}

// Board implements tickets.Store.
func (s *TicketStore) Board(ctx context.Context, id int64) (*tickets.Board, error) {
	var b tickets.Board
	err := s.db.QueryRowContext(ctx, "SELECT id, company_id, slug, title, created_at FROM board WHERE id = ?", id).
		Scan(&b.ID, &b.CompanyID, &b.Slug, &b.Title, &b.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, counters.Errorf(counters.ENOTFOUND, "Board %d not found.", id)
	} else if err != nil {
		return nil, mapError("storage.Board", err, false)
	}
	return &b, nil
}

// CreateTicket implements tickets.Store. Concurrent calls share INSERT
// statements; each returns after the statement holding its row committed.
func (s *TicketStore) CreateTicket(ctx context.Context, t *tickets.Ticket) error {
	t.CreatedAt = s.now()
	return s.ins.insert(ctx, t)
}

// Ticket implements tickets.Store.
func (s *TicketStore) Ticket(ctx context.Context, boardID, localID int64) (*tickets.Ticket, error) {
	return s.oneTicket(ctx, "storage.Ticket",
		"SELECT "+ticketColumns+" FROM ticket WHERE board_id = ? AND local_id = ?", boardID, localID)
}

// TicketBySlug implements tickets.Store.
func (s *TicketStore) TicketBySlug(ctx context.Context, companyID int64, slug string, localID int64) (*tickets.Ticket, error) {
	return s.oneTicket(ctx, "storage.TicketBySlug",
		`SELECT t.id, t.board_id, t.local_id, t.title, t.description, t.created_at
		FROM board b JOIN ticket t ON t.board_id = b.id
		WHERE b.company_id = ? AND b.slug = ? AND t.local_id = ?`, companyID, slug, localID)
}

func (s *TicketStore) oneTicket(ctx context.Context, op, query string, args ...any) (*tickets.Ticket, error) {
	t, err := scanTicket(s.db.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, counters.Errorf(counters.ENOTFOUND, "Ticket not found.")
	}
	return t, mapError(op, err, false)
}

// DeleteTicket implements tickets.Store.
func (s *TicketStore) DeleteTicket(ctx context.Context, boardID, localID int64) error {
	res, err := execRetried(ctx, s.db, "storage.DeleteTicket", "DELETE FROM ticket WHERE board_id = ? AND local_id = ?", boardID, localID)
	if err != nil {
		return mapError("storage.DeleteTicket", err, true)
	}
	if n, err := res.RowsAffected(); err != nil {
		return mapError("storage.DeleteTicket", err, true)
	} else if n == 0 {
		return counters.Errorf(counters.ENOTFOUND, "Ticket not found.")
	}
	return nil
}

// ListTickets implements tickets.Store with keyset pagination on the unique
// (board_id, local_id) key, reading one row more to learn whether another
// page follows.
func (s *TicketStore) ListTickets(ctx context.Context, boardID int64, f tickets.ListFilter) (*tickets.Page, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+ticketColumns+
		" FROM ticket WHERE board_id = ? AND local_id > ? ORDER BY local_id LIMIT ?", boardID, f.After, f.Limit+1)
	if err != nil {
		return nil, mapError("storage.ListTickets", err, false)
	}
	items, next, err := scanPage(rows, f.Limit, scanTicket, func(t *tickets.Ticket) int64 { return t.LocalID })
	if err != nil {
		return nil, mapError("storage.ListTickets", err, false)
	}
	return &tickets.Page{Tickets: items, NextAfter: next}, nil
}

// MaxLocalID implements tickets.Store.
func (s *TicketStore) MaxLocalID(ctx context.Context, boardID int64) (int64, error) {
	var n int64
	err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(local_id), 0) FROM ticket WHERE board_id = ?", boardID).Scan(&n)
	return n, mapError("storage.MaxLocalID", err, false)
}

func scanTicket(row scanner) (*tickets.Ticket, error) {
	var t tickets.Ticket
	if err := row.Scan(&t.ID, &t.BoardID, &t.LocalID, &t.Title, &t.Description, &t.CreatedAt); err != nil {
		return nil, err
	}
	return &t, nil
}
