package tickets

import "context"

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
