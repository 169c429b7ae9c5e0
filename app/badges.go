package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/app/badge"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
)

// defaultBadgeLabel is the label of a badge that asks for none.
const defaultBadgeLabel = "hits"

// badgeQuery is a badge's look and what it shows, from the query string.
type badgeQuery struct {
	opts   badge.Options
	format string
	show   string         // total, today, today_total or visitors
	zone   *time.Location // where today starts
	etag   bool           // answer with an ETag, and 304 to a request that has it
}

// parseBadge validates ?label=, ?color=, ?label_color= (or labelColor, as
// shields spells it), ?style=, ?format=, ?show= and ?tz=.
func parseBadge(c *fiber.Ctx) (badgeQuery, error) {
	args := c.Context().QueryArgs()
	b := badgeQuery{opts: badge.Options{Label: defaultBadgeLabel}, format: string(args.Peek("format")), show: string(args.Peek("show")), zone: time.UTC}
	if args.Has("label") {
		b.opts.Label = string(args.Peek("label"))
		if err := badge.ValidateLabel(b.opts.Label); err != nil {
			return b, counters.Errorf(counters.EINVALID, "label must be at most %d characters without control characters.", badge.MaxLabelRunes)
		}
	}
	for _, p := range []struct {
		key string
		dst *string
	}{{"color", &b.opts.Color}, {"label_color", &b.opts.LabelColor}, {"labelColor", &b.opts.LabelColor}} {
		if !args.Has(p.key) {
			continue
		}
		col, err := badge.ParseColor(string(args.Peek(p.key)))
		if err != nil {
			return b, counters.Errorf(counters.EINVALID, "%s must be a colour: a name such as blue or purple, hex such as 007ec6, or rgb(), rgba(), hsl() or hsla() with numbers.", p.key)
		}
		*p.dst = col
	}
	b.opts.Style = string(args.Peek("style"))
	if !badge.ValidStyle(b.opts.Style) {
		return b, counters.Errorf(counters.EINVALID, "style must be flat, flat-square, plastic or for-the-badge.")
	}
	if _, err := badge.FormatValue(0, b.format); err != nil {
		return b, counters.Errorf(counters.EINVALID, "format must be plain, comma, space or short.")
	}
	switch b.show {
	case "":
		b.show = "total"
	case "total", "today", "today_total", "visitors":
	default:
		return b, counters.Errorf(counters.EINVALID, "show must be total, today, today_total or visitors.")
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
// value, today's count, "today / total" as page-hit counters write it, or
// today's visitors. today is asked only when shown.
func (b badgeQuery) text(total int64, today func(*time.Location) (history.Point, error)) (string, error) {
	totalText, _ := badge.FormatValue(total, b.format) // validated in parseBadge
	if b.show == "total" {
		return totalText, nil
	}
	p, err := today(b.zone)
	if err != nil {
		return "", err
	}
	switch b.show {
	case "visitors":
		var n int64
		if p.Visitors != nil {
			n = *p.Visitors
		}
		text, _ := badge.FormatValue(n, b.format)
		return text, nil
	case "today":
		text, _ := badge.FormatValue(p.Count, b.format)
		return text, nil
	}
	todayText, _ := badge.FormatValue(p.Count, b.format)
	return todayText + " / " + totalText, nil
}

func (b badgeQuery) send(c *fiber.Ctx, text string) error {
	b.opts.Value = text
	return b.write(c)
}

func (b badgeQuery) write(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "image/svg+xml; charset=utf-8")
	// The badge is an image, never a document that may run anything, even
	// when opened on its own.
	c.Set(fiber.HeaderContentSecurityPolicy, "default-src 'none'; style-src 'unsafe-inline'")
	svg := badge.Render(b.opts)
	if b.etag {
		sum := sha256.Sum256(svg)
		tag := `"` + hex.EncodeToString(sum[:8]) + `"`
		c.Set(fiber.HeaderETag, tag)
		if c.Get(fiber.HeaderIfNoneMatch) == tag {
			return c.SendStatus(fiber.StatusNotModified)
		}
	}
	return c.Send(svg)
}

// errorBadges are the words a badge shows for an error, by code.
var errorBadges = map[string]string{
	counters.EINVALID:         "invalid",
	counters.EUNAUTHENTICATED: "unauthenticated",
	counters.EPERMISSION:      "forbidden",
	counters.ENOTFOUND:        "not found",
	counters.ERATELIMITED:     "rate limited",
	counters.EUNAVAILABLE:     "unavailable",
}

// badgeError is an error of a badge request from an image client: the
// error handler draws it ("hits | not found" in the error colour) with the
// error's status, instead of sending JSON that an <img> shows as a broken
// image.
type badgeError struct {
	label string
	err   error
}

func (e *badgeError) Error() string { return e.err.Error() }
func (e *badgeError) Unwrap() error { return e.err }

// asBadgeError makes err a badgeError when the request comes from an image
// client: one whose Accept names an image type, as browsers' <img> and
// image proxies send it. Other clients (curl, scripts, tests) get the JSON
// error of the contract.
func asBadgeError(c *fiber.Ctx, label string, err error) error {
	if err == nil || !strings.Contains(c.Get(fiber.HeaderAccept), "image/") {
		return err
	}
	return &badgeError{label: label, err: err}
}

// drawError writes e as a badge with status, if err is a badgeError.
func drawError(c *fiber.Ctx, err error, code string, status int) bool {
	var e *badgeError
	if !errors.As(err, &e) {
		return false
	}
	word, ok := errorBadges[code]
	if !ok {
		word = "error"
	}
	b := badgeQuery{opts: badge.Options{Label: e.label, Value: word, Color: badge.ErrorColor}}
	c.Status(status)
	b.write(c)
	return true
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

// todayOf is the counter name's count since the start of today in a zone,
// with the day's visitors when the badge shows them.
func todayOf(ctx context.Context, r todayReader, name string, b badgeQuery) func(*time.Location) (history.Point, error) {
	return func(zone *time.Location) (history.Point, error) {
		return r.Today(ctx, name, zone, b.show == "visitors")
	}
}
