package tickets

import (
	"context"

	"countersvc/counters"
)

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
