package app

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/keys"
)

// History is history's capability: the counts per hour, day and month of
// a counter or a prefix, privately under read access, and of a public
// counter (GET /v1/hits/{name}/history) for anyone, its name checked by
// page hits' rule (router.public). Its public route is a parameter path
// under /hits as page hits' own are; New routes page hits last.
func History(svc historyReader) Capability {
	return capabilityFunc(func(r router) {
		h := &historyHandlers{dbBudget: r.dbBudget, svc: svc, public: r.public, annotate: r.annotate}
		r.privateName("GET", "/counters/:name/history", keys.Read, h.counter)
		r.private("GET", "/history", prefixAccess(keys.Read), h.prefix)
		r.publicGet("/hits/:name/history", publicRoute, publicHeaders("no-store"), h.publicCounter)
	})
}

// historyHandlers serves the history of a counter, of a prefix, and of a
// public counter.
type historyHandlers struct {
	dbBudget
	svc      historyReader
	public   publicNames
	annotate annotator
}

// historyReader is how the HTTP API reads history (history.Service).
type historyReader interface {
	Parse(r history.Request) (history.Query, error)
	Series(ctx context.Context, q history.Query) (*history.Series, error)
	todayReader
}

// todayReader is how a badge reads today's count (history.Service).
type todayReader interface {
	Today(ctx context.Context, name string, zone *time.Location, visitors bool) (history.Point, error)
}

type pointJSON struct {
	Start    time.Time `json:"start"`
	Count    int64     `json:"count"`
	Visitors *int64    `json:"visitors,omitempty"` // day steps, when visitors are counted
}

type seriesJSON struct {
	Name   string      `json:"name,omitempty"`
	Prefix string      `json:"prefix,omitempty"`
	Step   string      `json:"step"`
	TZ     string      `json:"tz"`
	From   time.Time   `json:"from"`
	To     time.Time   `json:"to"`
	Points []pointJSON `json:"points"`
	Total  int64       `json:"total"`
	// Annotations are those of the range, when annotations=true.
	Annotations *[]annotationJSON `json:"annotations,omitempty"`
}

// historyRequest reads ?step=, ?tz=, ?from= and ?to=. The strings are
// copied: the zone keeps its name, and Fiber reuses the request's memory.
func historyRequest(c *fiber.Ctx) history.Request {
	q := func(k string) string { return strings.Clone(c.Query(k)) }
	return history.Request{Step: q("step"), Zone: q("tz"), From: q("from"), To: q("to")}
}

func (h *historyHandlers) counter(c *fiber.Ctx, name string) error {
	r := historyRequest(c)
	r.Name = name
	return h.answer(c, r, nil)
}

func (h *historyHandlers) prefix(c *fiber.Ctx) error {
	r := historyRequest(c)
	r.Prefix = strings.Clone(c.Query("prefix"))
	return h.answer(c, r, nil)
}

// answer checks r before MySQL sees it, then sends the series: JSON, with
// the range's annotations when asked, or CSV. public is the public names'
// rule when the read is public (nil when private): it answers only the
// annotations on public names and prefixes.
func (h *historyHandlers) answer(c *fiber.Ctx, r history.Request, public publicNames) error {
	q, err := h.svc.Parse(r)
	if err != nil {
		return err
	}
	f, err := formOf(c, fiber.MIMEApplicationJSON)
	if err != nil {
		return err
	}
	ctx, cancel := h.dbContext(c)
	defer cancel()
	s, err := h.svc.Series(ctx, q)
	if err != nil {
		return err
	}
	if f.csv {
		return seriesCSV(c, s)
	}
	out := seriesJSON{Name: s.Name, Prefix: s.Prefix, Step: string(s.Step), TZ: s.Zone.String(),
		From: s.From.In(s.Zone), To: s.To.In(s.Zone), Points: make([]pointJSON, len(s.Points)), Total: s.Total}
	for i, p := range s.Points {
		out.Points[i] = pointJSON{Start: p.Start, Count: p.Count, Visitors: p.Visitors}
	}
	if out.Annotations, err = h.annotate.of(ctx, f.annotated, public, s.Name, s.Prefix, s.From, s.To, s.Zone); err != nil {
		return err
	}
	return c.JSON(out)
}

// seriesCSV is a series as CSV: name,start,end,count, one line per
// period, its times in the series' zone; a prefix's series has the prefix
// in the name column.
func seriesCSV(c *fiber.Ctx, s *history.Series) error {
	name := s.Name
	if name == "" {
		name = s.Prefix
	}
	rows := make([][]string, len(s.Points))
	for i, p := range s.Points {
		end := s.To
		if i+1 < len(s.Points) {
			end = s.Points[i+1].Start
		}
		rows[i] = []string{textCell(name), p.Start.In(s.Zone).Format(time.RFC3339), end.In(s.Zone).Format(time.RFC3339), strconv.FormatInt(p.Count, 10)}
	}
	return sendCSV(c, []string{"name", "start", "end", "count"}, rows)
}

// publicCounter is a public counter's history: read-only, no token, a
// name outside the public prefixes 403 as for hits.
func (h *historyHandlers) publicCounter(c *fiber.Ctx) error {
	name, err := h.public.publicName(c)
	if err != nil {
		return err
	}
	r := historyRequest(c)
	r.Name = name
	return h.answer(c, r, h.public)
}
