package app

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// LabelsField is the field of an increment's body that carries its
// labels ({"labels": {"channel": "web"}}): an object of strings checked
// against the rules of breakdowns.Labels, absent or {} being none. With on
// (breakdowns count labels) they become the step's Extra
// (breakdowns.Of); off, they are checked and dropped, so that the
// increment is grouped and written exactly as an unlabelled one.
func LabelsField(on bool) ExtraField {
	return ExtraField{Key: "labels", Read: func(raw json.RawMessage) (counters.Extra, error) {
		var buf [breakdowns.MaxLabels]breakdowns.Label
		if sorted, ok := scanLabels(raw, buf[:]); ok {
			extra, err := breakdowns.OfSorted(sorted)
			if err != nil || !on {
				return nil, err
			}
			return extra, nil
		}
		return decodeLabels(raw, on)
	}}
}

// decodeLabels is LabelsField's way for a labels object that scanLabels
// leaves: encoding/json's, which also says what is wrong with it.
func decodeLabels(raw json.RawMessage, on bool) (counters.Extra, error) {
	var labels breakdowns.Labels
	if err := json.Unmarshal(raw, &labels); err != nil || string(raw) == "null" {
		return nil, counters.Errorf(counters.EINVALID, "%q must be an object of strings, such as {\"channel\": \"web\"}.", "labels")
	}
	if err := labels.Validate(); err != nil {
		return nil, err
	}
	if !on {
		return nil, nil
	}
	return breakdowns.Of(labels), nil
}

// breakdownReader is how the HTTP API reads breakdowns
// (breakdowns.Service).
type breakdownReader interface {
	Parse(r breakdowns.Request) (breakdowns.Query, error)
	Breakdown(ctx context.Context, q breakdowns.Query) (*breakdowns.Breakdown, error)
}

// Breakdowns is the breakdowns' capability: how a counter's or a
// prefix's count splits by one label (or by counter), privately under
// read access and publicly for names under the public prefixes, as their
// history is. Its public prefix route (/hits/breakdown) is static where
// the page hits' is a parameter (/hits/{name}): New routes capabilities
// first, so the static one wins.
func Breakdowns(svc breakdownReader) Capability {
	return capabilityFunc(func(r router) {
		h := &breakdownHandlers{dbBudget: r.dbBudget, svc: svc, public: r.public, annotate: r.annotate}
		noStore := publicHeaders("no-store")
		r.publicGet("/hits/breakdown", publicRoute, noStore, h.publicPrefix)
		r.publicGet("/hits/:name/breakdown", publicRoute, noStore, h.publicCounter)
		r.privateName("GET", "/counters/:name/breakdown", keys.Read, h.counter)
		r.private("GET", "/breakdown", prefixAccess(keys.Read), h.prefix)
	})
}

type breakdownHandlers struct {
	dbBudget
	svc      breakdownReader
	public   publicNames
	annotate annotator
}

type breakdownRowJSON struct {
	Value string `json:"value"`
	Count int64  `json:"count"`
}

type breakdownJSON struct {
	Name   string             `json:"name,omitempty"`
	Prefix string             `json:"prefix,omitempty"`
	By     string             `json:"by"`
	From   time.Time          `json:"from"`
	To     time.Time          `json:"to"`
	TZ     string             `json:"tz"`
	Total  int64              `json:"total"`
	Rows   []breakdownRowJSON `json:"rows"`
	More   int64              `json:"more"`
	// Annotations are those of the range, when annotations=true.
	Annotations *[]annotationJSON `json:"annotations,omitempty"`
}

// breakdownRequest reads ?by=, ?tz=, ?from=, ?to= and ?limit=, copied:
// Fiber reuses the request's memory.
func breakdownRequest(c *fiber.Ctx) breakdowns.Request {
	q := func(k string) string { return strings.Clone(c.Query(k)) }
	return breakdowns.Request{By: q("by"), Zone: q("tz"), From: q("from"), To: q("to"), Limit: q("limit")}
}

func (h *breakdownHandlers) counter(c *fiber.Ctx, name string) error {
	r := breakdownRequest(c)
	r.Name = name
	return h.answer(c, r, nil)
}

func (h *breakdownHandlers) prefix(c *fiber.Ctx) error {
	r := breakdownRequest(c)
	r.Prefix = strings.Clone(c.Query("prefix"))
	return h.answer(c, r, nil)
}

// publicCounter is a public counter's breakdown: read-only, no token, a
// name outside the public prefixes 403 as for hits.
func (h *breakdownHandlers) publicCounter(c *fiber.Ctx) error {
	name, err := h.public.publicName(c)
	if err != nil {
		return err
	}
	r := breakdownRequest(c)
	r.Name = name
	return h.answer(c, r, h.public)
}

// publicPrefix is a public prefix's breakdown: the prefix must lie under
// one of the public prefixes, so that every name it covers is public.
func (h *breakdownHandlers) publicPrefix(c *fiber.Ctx) error {
	r := breakdownRequest(c)
	r.Prefix = strings.Clone(c.Query("prefix"))
	if r.Prefix != "" {
		if err := h.public.publicPrefix(r.Prefix); err != nil {
			return err
		}
	}
	return h.answer(c, r, h.public)
}

// answer checks r before MySQL sees it, then sends the breakdown.
// public is as for history's answer.
func (h *breakdownHandlers) answer(c *fiber.Ctx, r breakdowns.Request, public publicNames) error {
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
	b, err := h.svc.Breakdown(ctx, q)
	if err != nil {
		return err
	}
	if f.csv {
		rows := make([][]string, len(b.Rows))
		for i, row := range b.Rows {
			rows[i] = []string{textCell(row.Value), strconv.FormatInt(row.Count, 10)}
		}
		return sendCSV(c, []string{"value", "count"}, rows)
	}
	out := breakdownJSON{Name: b.Name, Prefix: b.Prefix, By: b.By, From: b.From, To: b.To, TZ: b.Zone.String(),
		Total: b.Total, Rows: make([]breakdownRowJSON, len(b.Rows)), More: b.More}
	for i, row := range b.Rows {
		out.Rows[i] = breakdownRowJSON{Value: row.Value, Count: row.Count}
	}
	if out.Annotations, err = h.annotate.of(ctx, f.annotated, public, b.Name, b.Prefix, b.From, b.To, b.Zone); err != nil {
		return err
	}
	return c.JSON(out)
}
