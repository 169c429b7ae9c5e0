package app

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
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

// Tickets is the boards-and-tickets capability: /v1/boards and
// /v1/companies/{id}/tickets. Each route's access names a company: the
// board's (looked up through svc's board cache), or the path's or body's.
func Tickets(svc tickets.Service) Capability {
	return capabilityFunc(func(r router) {
		h := &ticketHandlers{dbBudget: r.dbBudget, svc: svc}
		r.private("POST", "/boards", bodyAccess("write company", boardCreateRequest, func(req tickets.BoardCreate, allow func(keys.Access, keys.Resource) error) error {
			return allow(keys.Write, keys.Company(req.CompanyID))
		}), h.createBoard)
		r.private("GET", "/boards/:board_id", h.boardAccess(keys.Read), h.getBoard)
		r.private("POST", "/boards/:board_id/tickets", h.boardAccess(keys.Write), h.createTicket)
		r.private("GET", "/boards/:board_id/tickets", h.boardAccess(keys.Read), h.listTickets)
		r.private("GET", "/boards/:board_id/tickets/:local_id", h.boardAccess(keys.Read), h.getTicket)
		r.private("DELETE", "/boards/:board_id/tickets/:local_id", h.boardAccess(keys.Write), h.deleteTicket)
		r.private("GET", "/companies/:company_id/tickets/:key", companyAccess(keys.Read), h.ticketByKey)
	})
}

// boardAccess is a to the company of the path's board. Whether the key may
// use some company is checked before the board is looked up, so that a key
// without companies learns nothing of which boards exist; the admin's
// requests look nothing up here.
func (h *ticketHandlers) boardAccess(a keys.Access) access {
	return access{desc: accessWord(a) + " board's company", check: func(g gate) error {
		id, err := positiveParam(g.c, "board_id")
		if err != nil {
			return err
		}
		if err := g.allow(a, keys.SomeCompany()); err != nil || principal(g.c).IsAdmin() {
			return err
		}
		ctx, cancel := h.dbContext(g.c)
		defer cancel()
		b, err := h.svc.Board(ctx, id)
		if err != nil {
			return err
		}
		return g.allow(a, keys.Company(b.CompanyID))
	}}
}

// companyAccess is a to the path's company.
func companyAccess(a keys.Access) access {
	return access{desc: accessWord(a) + " company", check: func(g gate) error {
		id, err := positiveParam(g.c, "company_id")
		if err != nil {
			return err
		}
		return g.allow(a, keys.Company(id))
	}}
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

// boardCreateRequest parses {"company_id", "slug", "title"} strictly.
func boardCreateRequest(c *fiber.Ctx) (req tickets.BoardCreate, err error) {
	obj, err := parseObject(c.Body(), "company_id", "slug", "title")
	if err != nil {
		return req, err
	}
	var ok bool
	if req.CompanyID, ok, err = obj.int64Field("company_id"); err != nil {
		return req, err
	} else if !ok {
		return req, counters.Errorf(counters.EINVALID, "The body must give %q.", "company_id")
	}
	if req.Slug, err = obj.requiredString("slug"); err != nil {
		return req, err
	}
	req.Title, err = obj.requiredString("title")
	return req, err
}

func (h *ticketHandlers) createBoard(c *fiber.Ctx) error {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	b, err := h.svc.CreateBoard(ctx, checked[tickets.BoardCreate](c))
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
