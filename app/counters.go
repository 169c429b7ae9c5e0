package app

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/foundation/deadline"
	"github.com/countersvc/countersvc/keys"
)

type counterJSON struct {
	Name      string    `json:"name"`
	Value     int64     `json:"value"`
	Min       *int64    `json:"min,omitempty"`
	Max       *int64    `json:"max,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func toJSON(c *counters.Counter) counterJSON {
	return counterJSON{Name: c.Name, Value: c.Value, Min: c.Min, Max: c.Max, CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt}
}

type valueJSON struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

type pageJSON struct {
	Counters  []counterJSON `json:"counters"`
	NextAfter *string       `json:"next_after"`
}

// counterHandlers serves /v1/counters.
type counterHandlers struct {
	dbBudget
	svc     counters.Service
	listTTL time.Duration
	extra   ExtraField // what else an increment's body may count
}

// dbBudget bounds a request's MySQL and Redis work: Fiber's own context is
// never cancelled, so without a deadline a hung database would hang clients.
type dbBudget struct {
	timeout time.Duration
	shared  *deadline.Shared // the requests' deadlines of timeout
}

func newDBBudget(timeout time.Duration) dbBudget {
	return dbBudget{timeout: timeout, shared: deadline.NewShared(timeout)}
}

// dbContext is the request's context, ending timeout from now (and at
// most deadline.MaxStep more): the requests of each step share one end,
// and one runtime timer (deadline.Shared), instead of one each. Its
// cancel may do nothing: what a handler starts under it, it ends itself.
func (b dbBudget) dbContext(c *fiber.Ctx) (context.Context, context.CancelFunc) {
	return b.shared.Context(c.UserContext())
}

// incrementBy reads the step from the body ({"by": n}) or the query
// (?by=n), and what else it counts from the body's extra field.
func incrementBy(c *fiber.Ctx, field ExtraField) (int64, counters.Extra, error) {
	obj, err := parseObject(c.Body(), "by", field.Key)
	if err != nil {
		return 0, nil, err
	}
	fromBody, inBody, err := obj.int64Field("by")
	if err != nil {
		return 0, nil, err
	}
	extra, err := field.of(obj)
	if err != nil {
		return 0, nil, err
	}
	fromQuery, inQuery, err := queryInt(c, "by")
	if err != nil {
		return 0, nil, err
	}
	switch {
	case inBody && inQuery:
		return 0, nil, counters.Errorf(counters.EINVALID, "Give the step either in the body or as ?by=, not both.")
	case inBody:
		return fromBody, extra, nil
	case inQuery:
		return fromQuery, extra, nil
	}
	return 1, extra, nil
}

func (h *counterHandlers) increment(c *fiber.Ctx, name string) error {
	by, extra, err := incrementBy(c, h.extra)
	if err != nil {
		return err
	}
	if hasIdempotencyKey(c) {
		return h.incrementOnce(c, name, by, extra)
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	v, err := h.svc.IncrementWith(ctx, name, by, extra)
	if err != nil {
		return err
	}
	return sendValue(c, name, v)
}

func (h *counterHandlers) get(c *fiber.Ctx, name string) error {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	ctr, err := h.svc.Get(ctx, name)
	if err != nil {
		return err
	}
	body, err := c.App().Config().JSONEncoder(toJSON(ctr))
	if err != nil {
		return err
	}
	// no-cache: a cache may keep the counter but must revalidate it, which
	// the ETag makes a 304 without a body when nothing changed.
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return sendTagged(c, body, entityTag(body))
}

// setRequest parses a PUT body: {"value": n, "min": n|null, "max": n|null}.
func setRequest(c *fiber.Ctx, name string) (counters.SetRequest, error) {
	req := counters.SetRequest{Name: name}
	obj, err := parseObject(c.Body(), "value", "min", "max")
	if err != nil {
		return req, err
	}
	v, ok, err := obj.int64Field("value")
	if err != nil {
		return req, err
	} else if !ok {
		return req, counters.Errorf(counters.EINVALID, "The body must give the counter's \"value\".")
	}
	req.Value = v
	if req.Min, err = obj.boundField("min"); err != nil {
		return req, err
	}
	if req.Max, err = obj.boundField("max"); err != nil {
		return req, err
	}
	switch inm := strings.TrimSpace(c.Get(fiber.HeaderIfNoneMatch)); inm {
	case "":
	case "*":
		req.CreateOnly = true
	default:
		return req, counters.Errorf(counters.EINVALID, "If-None-Match supports only \"*\" (create only).")
	}
	return req, nil
}

func (h *counterHandlers) set(c *fiber.Ctx, name string) error {
	req, err := setRequest(c, name)
	if err != nil {
		return err
	}
	if hasIdempotencyKey(c) {
		return h.setOnce(c, req)
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	ctr, created, err := h.svc.Set(ctx, req)
	if err != nil {
		return err
	}
	return sendCounter(c, ctr, created)
}

// sendCounter answers a set: 201 when it created the counter.
func sendCounter(c *fiber.Ctx, ctr *counters.Counter, created bool) error {
	if created {
		c.Status(fiber.StatusCreated)
	}
	return c.JSON(toJSON(ctr))
}

func (h *counterHandlers) delete(c *fiber.Ctx, name string) error {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	if err := h.svc.Delete(ctx, name); err != nil {
		return err
	}
	return c.SendStatus(fiber.StatusNoContent)
}

func (h *counterHandlers) list(c *fiber.Ctx) error {
	limit, hasLimit, err := queryInt(c, "limit")
	if err != nil {
		return err
	}
	if hasLimit {
		if err := counters.ValidateLimit(limit); err != nil {
			return err
		}
	}
	l := checked[listing](c)
	f := counters.ListFilter{Prefix: l.prefix, After: strings.Clone(c.Query("after")), Limit: int(limit)}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	page, err := l.list(ctx, h.svc, f)
	if err != nil {
		return err
	}
	out := pageJSON{Counters: make([]counterJSON, len(page.Counters)), NextAfter: page.NextAfter}
	for i := range page.Counters {
		out.Counters[i] = toJSON(&page.Counters[i])
	}
	c.Set(fiber.HeaderCacheControl, maxAge(h.listTTL))
	return c.JSON(out)
}

// maxAge says how stale a list may be: it may come from a cache that lags
// by up to the list TTL. Without one, a client revalidates as it does a
// counter's read.
func maxAge(ttl time.Duration) string {
	if ttl == 0 {
		return "no-cache"
	}
	secs := int(ttl.Round(time.Second) / time.Second)
	if secs < 1 {
		secs = 1
	}
	return "private, max-age=" + strconv.Itoa(secs)
}

// resetRequest parses {"prefix", "all", "value"} strictly.
func resetRequest(c *fiber.Ctx) (req counters.ResetRequest, err error) {
	obj, err := parseObject(c.Body(), "prefix", "all", "value")
	if err != nil {
		return req, err
	}
	if req.Prefix, _, err = obj.stringField("prefix"); err != nil {
		return req, err
	}
	if req.All, _, err = obj.boolField("all"); err != nil {
		return req, err
	}
	if req.Value, _, err = obj.int64Field("value"); err != nil {
		return req, err
	}
	if counters.IsReserved(req.Prefix) {
		return req, errReserved()
	}
	return req, nil
}

// resetAccess: a reset of all counters is the admin's; a prefix must be
// the key's.
func resetAccess() access {
	return bodyAccess("write reset", resetRequest, func(req counters.ResetRequest, allow func(keys.Access, keys.Resource) error) error {
		if req.All {
			return allow(keys.Write, keys.AllCounters())
		}
		return allow(keys.Write, keys.Prefix(req.Prefix))
	})
}

func (h *counterHandlers) reset(c *fiber.Ctx) error {
	req := checked[counters.ResetRequest](c)
	ctx, cancel := h.dbContext(c)
	defer cancel()
	n, err := h.svc.Reset(ctx, req)
	if err != nil {
		return err
	}
	return c.JSON(fiber.Map{"reset": n})
}

// list reads a page of the listing: the caller's prefix, without the
// reserved names where they are hidden from it. They are left out by the
// store's query, not from the page it read, so that a page is full while
// visible names follow and next_after is never a hidden name.
func (l listing) list(ctx context.Context, svc counters.Service, f counters.ListFilter) (*counters.Page, error) {
	f.HideReserved = l.hidesReserved
	return svc.List(ctx, f)
}
