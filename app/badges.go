package app

import (
	"context"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"countersvc/app/badge"
	"countersvc/counters"
	"countersvc/history"
)

// badgeQuery is a badge's look and what it shows, from the query string.
type badgeQuery struct {
	opts   badge.Options
	format string
	show   string         // total, today or today_total
	zone   *time.Location // where today starts
}

// parseBadge validates ?label=, ?color=, ?label_color=, ?format=, ?show=
// and ?tz=.
func parseBadge(c *fiber.Ctx) (badgeQuery, error) {
	args := c.Context().QueryArgs()
	b := badgeQuery{opts: badge.Options{Label: "hits"}, format: string(args.Peek("format")), show: string(args.Peek("show")), zone: time.UTC}
	if args.Has("label") {
		b.opts.Label = string(args.Peek("label"))
		if err := badge.ValidateLabel(b.opts.Label); err != nil {
			return b, counters.Errorf(counters.EINVALID, "label must be at most %d characters without control characters.", badge.MaxLabelRunes)
		}
	}
	for _, p := range []struct {
		key string
		dst *string
	}{{"color", &b.opts.Color}, {"label_color", &b.opts.LabelColor}} {
		if !args.Has(p.key) {
			continue
		}
		col, err := badge.ParseColor(string(args.Peek(p.key)))
		if err != nil {
			return b, counters.Errorf(counters.EINVALID, "%s must be a colour name such as blue, or hex such as 007ec6.", p.key)
		}
		*p.dst = col
	}
	if _, err := badge.FormatValue(0, b.format); err != nil {
		return b, counters.Errorf(counters.EINVALID, "format must be plain, comma, space or short.")
	}
	switch b.show {
	case "":
		b.show = "total"
	case "total", "today", "today_total":
	default:
		return b, counters.Errorf(counters.EINVALID, "show must be total, today or today_total.")
	}
	if args.Has("tz") {
		zone, err := history.LoadZone(string(args.Peek("tz"))) // a copy: the zone keeps its name
		if err != nil {
			return b, err
		}
		b.zone = zone
	}
	return b, nil
}

// text is what the badge shows of a counter whose value is total: the
// value, today's count, or "today / total" as page-hit counters write it.
// today is asked only when shown.
func (b badgeQuery) text(total int64, today func(*time.Location) (int64, error)) (string, error) {
	totalText, _ := badge.FormatValue(total, b.format) // validated in parseBadge
	if b.show == "total" {
		return totalText, nil
	}
	n, err := today(b.zone)
	if err != nil {
		return "", err
	}
	todayText, _ := badge.FormatValue(n, b.format)
	if b.show == "today" {
		return todayText, nil
	}
	return todayText + " / " + totalText, nil
}

func (b badgeQuery) send(c *fiber.Ctx, text string) error {
	b.opts.Value = text
	c.Set(fiber.HeaderContentType, "image/svg+xml; charset=utf-8")
	// The badge is an image, never a document that may run anything, even
	// when opened on its own.
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; style-src 'unsafe-inline'")
	return c.Send(badge.Render(b.opts))
}

// shieldsJSON is shields.io's endpoint-badge schema, and nothing more:
// shields refuses keys it does not know.
type shieldsJSON struct {
	SchemaVersion int    `json:"schemaVersion"`
	Label         string `json:"label"`
	Message       string `json:"message"`
	Color         string `json:"color"`
}

func (b badgeQuery) sendShields(c *fiber.Ctx, text string) error {
	col := b.opts.Color
	if col == "" {
		col = badge.DefaultColor
	}
	return c.JSON(shieldsJSON{SchemaVersion: 1, Label: b.opts.Label, Message: text, Color: strings.TrimPrefix(col, "#")})
}

// todayOf is the counter name's count since the start of today in a zone.
func (h *historyHandlers) todayOf(ctx context.Context, name string) func(*time.Location) (int64, error) {
	return func(zone *time.Location) (int64, error) { return h.svc.Today(ctx, name, zone) }
}
