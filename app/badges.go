package app

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"countersvc/app/badge"
	"countersvc/counters"
)

// defaultBadgeLabel is the label of a badge that asks for none.
const defaultBadgeLabel = "hits"

// badgeQuery is a badge's look, from the query string.
type badgeQuery struct {
	opts   badge.Options
	format string
	etag   bool // answer with an ETag, and 304 to a request that has it
}

// parseBadge validates ?label=, ?color=, ?label_color= (or labelColor, as
// shields spells it), ?style= and ?format=.
func parseBadge(c *fiber.Ctx) (badgeQuery, error) {
	args := c.Context().QueryArgs()
	b := badgeQuery{opts: badge.Options{Label: defaultBadgeLabel}, format: string(args.Peek("format"))}
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
			return b, counters.Errorf(counters.EINVALID, "%s must be a colour name such as blue, or hex such as 007ec6.", p.key)
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
	return b, nil
}

func (b badgeQuery) send(c *fiber.Ctx, v int64) error {
	b.opts.Value, _ = badge.FormatValue(v, b.format) // validated in parseBadge
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
	counters.EINVALID:     "invalid",
	counters.EPERMISSION:  "forbidden",
	counters.ENOTFOUND:    "not found",
	counters.ERATELIMITED: "rate limited",
	counters.EUNAVAILABLE: "unavailable",
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
