package tickets

import (
	"context"

	"github.com/countersvc/countersvc/counters"
)

// Service is the boards-and-tickets domain as the HTTP layer sees it.
// Methods return *counters.Error values; every method may also return
// EUNAVAILABLE when MySQL cannot be reached.
type Service interface {
	// CreateBoard creates a board with the upper-cased slug. Returns
	// EINVALID for a bad company id, slug or title, ECONFLICT when the
	// company already has a board with that slug.
	CreateBoard(ctx context.Context, req BoardCreate) (*Board, error)

	// Board returns the board. Returns EINVALID for an id below 1,
	// ENOTFOUND when there is no such board.
	Board(ctx context.Context, id int64) (*Board, error)

	// CreateTicket gives the ticket the board's next number and stores it;
	// the ticket is committed when CreateTicket returns it. Returns EINVALID
	// for a bad title or description, ENOTFOUND for an unknown board. A
	// failed creation may leave a gap in the numbers, never a duplicate.
	CreateTicket(ctx context.Context, boardID int64, req TicketCreate) (*Ticket, error)

	// Ticket returns a ticket by its number on the board. Returns ENOTFOUND
	// when the board or the ticket does not exist.
	Ticket(ctx context.Context, boardID, localID int64) (*Ticket, error)

	// TicketByKey returns the ticket of a key such as NINJA-7 (or ninja-7)
	// among the company's boards. Returns EINVALID for a malformed key,
	// ENOTFOUND when there is no such ticket.
	TicketByKey(ctx context.Context, companyID int64, key string) (*Ticket, error)

	// DeleteTicket deletes a ticket; its number is never handed out again.
	// Returns ENOTFOUND when the board or the ticket does not exist.
	DeleteTicket(ctx context.Context, boardID, localID int64) error

	// ListTickets returns a page of the board's tickets ordered by number.
	// Returns EINVALID for a bad filter, ENOTFOUND for an unknown board.
	ListTickets(ctx context.Context, boardID int64, f ListFilter) (*Page, error)
}

// Store is what the service needs from persistence; storage/ implements it
// against MySQL. Arguments are already validated, and the Key of the
// tickets it returns is left for the service to fill in.
type Store interface {
	// CreateBoard stores b and sets its ID and CreatedAt. Returns ECONFLICT
	// when the company already has a board with b.Slug.
	CreateBoard(ctx context.Context, b *Board) error

	// Board returns ENOTFOUND when there is no such board.
	Board(ctx context.Context, id int64) (*Board, error)

	// CreateTicket stores t with its BoardID and LocalID and sets its ID and
	// CreatedAt; it returns only after the row is committed. Returns
	// ECONFLICT when the board already has a ticket with t.LocalID,
	// ENOTFOUND when the board does not exist.
	CreateTicket(ctx context.Context, t *Ticket) error

	// Ticket returns ENOTFOUND when the board has no ticket localID.
	Ticket(ctx context.Context, boardID, localID int64) (*Ticket, error)

	// TicketBySlug finds a ticket by the slug of its board within a company.
	// Returns ENOTFOUND when there is none.
	TicketBySlug(ctx context.Context, companyID int64, slug string, localID int64) (*Ticket, error)

	// DeleteTicket returns ENOTFOUND when the board has no ticket localID.
	DeleteTicket(ctx context.Context, boardID, localID int64) error

	// ListTickets returns a page of the board's tickets; it does not check
	// that the board exists.
	ListTickets(ctx context.Context, boardID int64, f ListFilter) (*Page, error)

	// MaxLocalID returns the highest ticket number in use on the board, 0
	// when it has no tickets.
	MaxLocalID(ctx context.Context, boardID int64) (int64, error)
}

// maxNumberAttempts bounds how often CreateTicket takes a new number when
// the one it got is already in use.
const maxNumberAttempts = 3

// NewService returns the tickets service over store, numbering tickets with
// the reserved counters of ctrs.
func NewService(store Store, ctrs counters.Service) Service {
	return &service{store: store, counters: ctrs, boards: newBoardCache(10000)}
}

type service struct {
	store    Store
	counters counters.Service
	boards   *boardCache
}

func (s *service) CreateBoard(ctx context.Context, req BoardCreate) (*Board, error) {
	if err := req.Normalize(); err != nil {
		return nil, err
	}
	b := &Board{CompanyID: req.CompanyID, Slug: req.Slug, Title: req.Title}
	if err := s.store.CreateBoard(ctx, b); err != nil {
		return nil, err
	}
	s.boards.put(b)
	return b, nil
}

func (s *service) Board(ctx context.Context, id int64) (*Board, error) {
	if err := validID("board id", id); err != nil {
		return nil, err
	}
	if b, ok := s.boards.get(id); ok {
		return b, nil
	}
	b, err := s.store.Board(ctx, id)
	if err != nil {
		return nil, err
	}
	s.boards.put(b)
	return b, nil
}

// CreateTicket takes the board's next number from its counter, then
// inserts the ticket. The counter keeps the high-water mark, so a deleted
// ticket's number is never handed out again, and an insert that fails after
// the increment leaves a gap rather than a duplicate.
func (s *service) CreateTicket(ctx context.Context, boardID int64, req TicketCreate) (*Ticket, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	b, err := s.Board(ctx, boardID)
	if err != nil {
		return nil, err
	}
	seq := SequenceName(b.ID)
	for attempt := 1; ; attempt++ {
		n, err := s.counters.Increment(ctx, seq, 1)
		if err != nil {
			return nil, err
		}
		t := &Ticket{BoardID: b.ID, LocalID: n, Title: req.Title, Description: req.Description}
		if n >= 1 {
			err = s.store.CreateTicket(ctx, t)
		} else { // a counter set back below 1 outside this service
			err = counters.Errorf(counters.ECONFLICT, "Ticket number %d is not usable.", n)
		}
		if err == nil {
			t.Key = FormatKey(b.Slug, n)
			return t, nil
		}
		if counters.ErrorCode(err) != counters.ECONFLICT {
			return nil, err
		}
		if attempt == maxNumberAttempts {
			return nil, counters.Wrap(counters.EINTERNAL, "tickets.CreateTicket", err, "")
		}
		if err := s.skipNumbersInUse(ctx, seq, b.ID, n); err != nil {
			return nil, err
		}
	}
}

// skipNumbersInUse moves the board's counter past the highest number in use
// when it fell behind its tickets (say, the counter table was restored from
// an older backup than the tickets). It only ever adds, so a concurrent
// increment can make the jump larger, never undo it.
func (s *service) skipNumbersInUse(ctx context.Context, seq string, boardID, got int64) error {
	high, err := s.store.MaxLocalID(ctx, boardID)
	if err != nil {
		return err
	}
	if high > got {
		_, err = s.counters.Increment(ctx, seq, high-got)
	}
	return err
}

func (s *service) Ticket(ctx context.Context, boardID, localID int64) (*Ticket, error) {
	if err := validID("ticket number", localID); err != nil {
		return nil, err
	}
	b, err := s.Board(ctx, boardID)
	if err != nil {
		return nil, err
	}
	t, err := s.store.Ticket(ctx, b.ID, localID)
	if err != nil {
		return nil, err
	}
	t.Key = FormatKey(b.Slug, t.LocalID)
	return t, nil
}

func (s *service) TicketByKey(ctx context.Context, companyID int64, key string) (*Ticket, error) {
	if err := validID("company id", companyID); err != nil {
		return nil, err
	}
	slug, localID, err := ParseKey(key)
	if err != nil {
		return nil, err
	}
	t, err := s.store.TicketBySlug(ctx, companyID, slug, localID)
	if err != nil {
		return nil, err
	}
	t.Key = FormatKey(slug, t.LocalID)
	return t, nil
}

func (s *service) DeleteTicket(ctx context.Context, boardID, localID int64) error {
	if err := validID("ticket number", localID); err != nil {
		return err
	}
	if _, err := s.Board(ctx, boardID); err != nil {
		return err
	}
	return s.store.DeleteTicket(ctx, boardID, localID)
}

func (s *service) ListTickets(ctx context.Context, boardID int64, f ListFilter) (*Page, error) {
	if err := f.Normalize(); err != nil {
		return nil, err
	}
	b, err := s.Board(ctx, boardID)
	if err != nil {
		return nil, err
	}
	page, err := s.store.ListTickets(ctx, b.ID, f)
	if err != nil {
		return nil, err
	}
	for i := range page.Tickets {
		page.Tickets[i].Key = FormatKey(b.Slug, page.Tickets[i].LocalID)
	}
	return page, nil
}

func validID(what string, id int64) error {
	if id < 1 {
		return counters.Errorf(counters.EINVALID, "The %s must be a positive integer.", what)
	}
	return nil
}
