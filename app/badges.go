package app

import (
	"github.com/gofiber/fiber/v2"

	"countersvc/app/badge"
	"countersvc/counters"
)

// badgeQuery is a badge's look, from the query string.
type badgeQuery struct {
	opts   badge.Options
	format string
}

// parseBadge validates ?label=, ?color=, ?label_color= and ?format=.
func parseBadge(c *fiber.Ctx) (badgeQuery, error) {
	args := c.Context().QueryArgs()
	b := badgeQuery{opts: badge.Options{Label: "hits"}, format: string(args.Peek("format"))}
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
	return b, nil
}

func (b badgeQuery) send(c *fiber.Ctx, v int64) error {
	b.opts.Value, _ = badge.FormatValue(v, b.format) // validated in parseBadge
	c.Set(fiber.HeaderContentType, "image/svg+xml; charset=utf-8")
	// The badge is an image, never a document that may run anything, even
	// when opened on its own.
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; style-src 'unsafe-inline'")
	return c.Send(badge.Render(b.opts))
}
