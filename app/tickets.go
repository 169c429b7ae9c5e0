package app

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/tickets"
)

type boardJSON struct {
	ID        int64     `json:"id"`
	CompanyID int64     `json:"company_id"`
	Slug      string    `json:"slug"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"created_at"`
}

type ticketJSON struct {
	ID          int64     `json:"id"`
	BoardID     int64     `json:"board_id"`
	LocalID     int64     `json:"local_id"`
	Key         string    `json:"key"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

type ticketPageJSON struct {
	Tickets   []ticketJSON `json:"tickets"`
	NextAfter *int64       `json:"next_after"`
}

func boardToJSON(b *tickets.Board) boardJSON {
	return boardJSON{ID: b.ID, CompanyID: b.CompanyID, Slug: b.Slug, Title: b.Title, CreatedAt: b.CreatedAt}
}

func ticketToJSON(t *tickets.Ticket) ticketJSON {
	return ticketJSON{ID: t.ID, BoardID: t.BoardID, LocalID: t.LocalID, Key: t.Key,
		Title: t.Title, Description: t.Description, CreatedAt: t.CreatedAt}
}

// ticketHandlers serves /v1/boards and /v1/companies/{id}/tickets.
type ticketHandlers struct {
	dbBudget
	svc tickets.Service
}

// registerTicketRoutes adds the boards-and-tickets endpoints behind auth.
func registerTicketRoutes(v1 fiber.Router, auth fiber.Handler, svc tickets.Service, timeout time.Duration) {
	h := &ticketHandlers{dbBudget: dbBudget{timeout}, svc: svc}
	v1.Post("/boards", auth, h.createBoard)
	v1.Get("/boards/:board_id", auth, h.getBoard)
	v1.Post("/boards/:board_id/tickets", auth, h.createTicket)
	v1.Get("/boards/:board_id/tickets", auth, h.listTickets)
	v1.Get("/boards/:board_id/tickets/:local_id", auth, h.getTicket)
	v1.Delete("/boards/:board_id/tickets/:local_id", auth, h.deleteTicket)
	v1.Get("/companies/:company_id/tickets/:key", auth, h.ticketByKey)
}

// positiveParam parses a path segment that must be a positive integer id.
func positiveParam(c *fiber.Ctx, param string) (int64, error) {
	n, err := strconv.ParseInt(c.Params(param), 10, 64)
	if err != nil || n < 1 {
		return 0, counters.Errorf(counters.EINVALID, "%s in the path must be a positive integer.", param)
	}
	return n, nil
}

// requiredString reads a string field that the body must give.
func (o jsonObject) requiredString(key string) (string, error) {
	s, ok, err := o.stringField(key)
	if err == nil && !ok {
		err = counters.Errorf(counters.EINVALID, "The body must give %q.", key)
	}
	return s, err
}

func (h *ticketHandlers) createBoard(c *fiber.Ctx) error {
	obj, err := parseObject(c.Body(), "company_id", "slug", "title")
	if err != nil {
		return err
	}
	var req tickets.BoardCreate
	var ok bool
	if req.CompanyID, ok, err = obj.int64Field("company_id"); err != nil {
		return err
	} else if !ok {
		return counters.Errorf(counters.EINVALID, "The body must give %q.", "company_id")
	}
	if req.Slug, err = obj.requiredString("slug"); err != nil {
		return err
	}
	if req.Title, err = obj.requiredString("title"); err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	b, err := h.svc.CreateBoard(ctx, req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(boardToJSON(b))
}

func (h *ticketHandlers) getBoard(c *fiber.Ctx) error {
	id, err := positiveParam(c, "board_id")
	if err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	b, err := h.svc.Board(ctx, id)
	if err != nil {
		return err
	}
	return c.JSON(boardToJSON(b))
}

func (h *ticketHandlers) createTicket(c *fiber.Ctx) error {
	boardID, err := positiveParam(c, "board_id")
	if err != nil {
		return err
	}
	obj, err := parseObject(c.Body(), "title", "description")
	if err != nil {
		return err
	}
	var req tickets.TicketCreate
	if req.Title, err = obj.requiredString("title"); err != nil {
		return err
	}
	if req.Description, _, err = obj.stringField("description"); err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	t, err := h.svc.CreateTicket(ctx, boardID, req)
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(ticketToJSON(t))
}

func (h *ticketHandlers) listTickets(c *fiber.Ctx) error {
	boardID, err := positiveParam(c, "board_id")
	if err != nil {
		return err
	}
	after, _, err := queryInt(c, "after")
	if err != nil {
		return err
	}
	limit, hasLimit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	if hasLimit {
		if err := counters.ValidateLimit(limit); err != nil {
			return err
		}
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	page, err := h.svc.ListTickets(ctx, boardID, tickets.ListFilter{After: after, Limit: int(limit)})
	if err != nil {
		return err
	}
	out := ticketPageJSON{Tickets: make([]ticketJSON, len(page.Tickets)), NextAfter: page.NextAfter}
	for i := range page.Tickets {
		out.Tickets[i] = ticketToJSON(&page.Tickets[i])
	}
	return c.JSON(out)
}

// ticketParams reads the board id and the ticket number of the path.
func ticketParams(c *fiber.Ctx) (boardID, localID int64, err error) {
	if boardID, err = positiveParam(c, "board_id"); err != nil {
		return 0, 0, err
	}
	localID, err = positiveParam(c, "local_id")
	return boardID, localID, err
}

func (h *ticketHandlers) getTicket(c *fiber.Ctx) error {
	boardID, localID, err := ticketParams(c)
	if err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	t, err := h.svc.Ticket(ctx, boardID, localID)
	if err != nil {
		return err
	}
	return c.JSON(ticketToJSON(t))
}

func (h *ticketHandlers) deleteTicket(c *fiber.Ctx) error {
	boardID, localID, err := ticketParams(c)
	if err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	if err := h.svc.DeleteTicket(ctx, boardID, localID); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (h *ticketHandlers) ticketByKey(c *fiber.Ctx) error {
	companyID, err := positiveParam(c, "company_id")
	if err != nil {
		return err
	}
	key, err := url.PathUnescape(c.Params("key"))
	if err != nil {
		return counters.Errorf(counters.EINVALID, "The key in the path is not correctly percent-encoded.")
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	t, err := h.svc.TicketByKey(ctx, companyID, strings.Clone(key))
	if err != nil {
		return err
	}
	return c.JSON(ticketToJSON(t))
}
