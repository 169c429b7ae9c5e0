package app

import (
	"errors"
	"net/netip"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/keys"
)

// hitHandlers serves the public page-hit endpoints: no token, only names
// under the public prefixes. The rules are hits.Service's; these handlers
// only read the request and write the answer.
type hitHandlers struct {
	publicRule // hits, the page-hit rules
	proxies    trustedProxies
	dbBudget
	today todayReader // the badges' count of today (history.Service)

	// The read-only badges' way to a counter outside the public prefixes:
	// the contract gives badges the read scope, so a request that carries
	// credentials is authenticated and its read checked by keys, exactly as
	// GET /v1/counters/{name} is (the route's access, see read).
	auth     func(*fiber.Ctx) error
	keys     *keys.Service
	counters counters.Service
}

// credentials authenticates a read-only badge request for a name outside
// the public prefixes, as any private read is, and lets every other one
// through as it is: a public name needs none (a page's <img> sends none,
// and a stale header must not break it). A request without credentials
// that authenticates nobody (a token is set, or the client is not on this
// machine) goes on anonymously and gets the public refusal from
// readableName; without a token, a loopback client is served, as it is
// GET /v1/counters/{name}.
func (h *hitHandlers) credentials(c *fiber.Ctx) error {
	name, err := pathName(c, "name")
	if err != nil || h.hits.Public(name) == nil {
		return c.Next()
	}
	if err := h.auth(c); err != nil && c.Get(fiber.HeaderAuthorization) != "" {
		return asBadgeError(c, defaultBadgeLabel, err) // drawn for an image client, as without credentials
	}
	return c.Next()
}

// privately reports whether the request reads with its credentials:
// they authenticated it for a name outside the public prefixes.
func privately(c *fiber.Ctx) bool { return keys.FromContext(c.UserContext()) != nil }

// readableName is the :name of a read-only badge: a public name, or any
// name for an authenticated request, whose read keys checks (read). A
// private name without credentials is 401, as any read that needs a token
// and has none (openapi.yaml), not the 403 of a hit on a private name.
func (h *hitHandlers) readableName(c *fiber.Ctx) (string, error) {
	if privately(c) {
		return pathName(c, "name")
	}
	name, err := h.publicName(c)
	if counters.ErrorCode(err) == counters.EPERMISSION {
		return "", counters.Errorf(counters.EUNAUTHENTICATED, "Only names under the public prefixes can be read without a token; send Authorization: Bearer with a token that may read this one.")
	}
	return name, err
}

// hit counts a page hit. Its name is checked by hits.Service.Count, first
// thing, with publicName's answer: once a request.
func (h *hitHandlers) hit(c *fiber.Ctx) error {
	name, err := pathName(c, "name")
	if err != nil {
		return err
	}
	v, err := h.count(c, name)
	if err != nil {
		return err
	}
	return sendValue(c, name, v)
}

// badge answers a public counter's badge, its value from value: h.count
// for the hit badge, h.read for the read-only one; send draws it (SVG, or
// shields.io's JSON). The query is checked before value runs, so a bad
// badge URL changes nothing. Today's count is read after the hit counted.
func (h *hitHandlers) badge(named func(*fiber.Ctx) (string, error), value func(*fiber.Ctx, string) (int64, error), send func(badgeQuery, *fiber.Ctx, string) error) fiber.Handler {
	return func(c *fiber.Ctx) error {
		name, err := named(c)
		if err != nil {
			return asBadgeError(c, defaultBadgeLabel, err)
		}
		b, err := parseBadge(c)
		if err != nil {
			return asBadgeError(c, defaultBadgeLabel, err) // the label may be what is wrong
		}
		v, err := value(c, name)
		if err != nil {
			return asBadgeError(c, b.opts.Label, err)
		}
		if h.hits.ImageProxy(c.Get(fiber.HeaderUserAgent)) {
			// As GitHub asks of images behind camo: revalidate on every
			// view (so that each one reaches us and counts), by ETag.
			c.Set(fiber.HeaderCacheControl, "no-cache")
			b.etag = true
		}
		ctx, cancel := h.dbContext(c)
		defer cancel()
		today := todayOf(ctx, h.today, name, b)
		text, err := b.text(v, today)
		if err != nil {
			return asBadgeError(c, b.opts.Label, err)
		}
		return send(b, c, text)
	}
}

// read is a counter's value without counting a hit; ENOTFOUND if missing.
func (h *hitHandlers) read(c *fiber.Ctx, name string) (int64, error) {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	if privately(c) {
		// The route's access, "read name with credentials": checked here,
		// before the read, so that a refusal is drawn as the badge's error.
		if err := h.keys.Allow(ctx, keys.Read, keys.Name(name)); err != nil {
			return 0, err
		}
		ctr, err := h.counters.Get(ctx, name)
		if err != nil {
			return 0, err
		}
		return ctr.Value, nil
	}
	return h.hits.Read(ctx, name)
}

// count counts the request as a page view, as hits.Service.Count rules, and
// sets Retry-After when the client is over its rate limit.
func (h *hitHandlers) count(c *fiber.Ctx, name string) (int64, error) {
	ctx, cancel := h.dbContext(c)
	defer cancel()
	v, err := h.hits.Count(ctx, visit(c, name, h.proxies.clientAddr(c)))
	var limited *hits.RateLimitedError
	if err != nil && errors.As(err, &limited) { // a counted hit skips errors.As and its target's allocation
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(limited.Seconds()))
	}
	return v, err
}

// visit is what hits.Count reads of a hit request. The strings are
// Fiber's, used during the call only: the labeller copies what it keeps.
// Of the query only ref and the three utm_ values are read, and of the
// referrers only their hosts are kept (see hits.Labeller).
func visit(c *fiber.Ctx, name string, addr netip.Addr) hits.Visit {
	args := c.Context().QueryArgs()
	return hits.Visit{
		Name:      name,
		Addr:      addr,
		UserAgent: c.Get(fiber.HeaderUserAgent),
		Head:      c.Method() == fiber.MethodHead,
		Ref:       c.Query("ref"),
		RefSent:   args.Has("ref"),
		Referer:   c.Get(fiber.HeaderReferer),
		Origin:    c.Get(fiber.HeaderOrigin),
		Campaign: hits.Campaign{
			Source:   c.Query("utm_source"),
			Medium:   c.Query("utm_medium"),
			Campaign: c.Query("utm_campaign"),
		},
	}
}
