package app

import (
	_ "embed"
	"slices"
	"strings"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/cors"
)

// snippetCacheControl lets browsers and CDNs keep the script a while; a changed
// snippet reaches every page within five minutes.
const snippetCacheControl = "public, max-age=300"

// publicHeaders marks the answers of the public endpoints, errors
// included: any page may read them (CORS "*", never with credentials), and
// caches keep them as long as cacheControl says; "no-store" for hits, since
// every page view must reach the service.
func publicHeaders(cacheControl string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderAccessControlAllowOrigin, "*")
		c.Set(fiber.HeaderCacheControl, cacheControl)
		c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
		return c.Next()
	}
}

// preflight answers CORS preflight requests of the public endpoints. The
// snippet's GET needs none, but pages that add headers of their own do.
var preflight = cors.New(cors.Config{
	AllowOrigins:  "*",
	AllowMethods:  "GET,HEAD,OPTIONS",
	ExposeHeaders: fiber.HeaderRetryAfter,
	MaxAge:        86400,
})

// snippetJS is the page-hit script served at GET /v1/snippet.js, embedded
// so that the binary is self-contained.
//
//go:embed snippet.js
var snippetJS []byte

// The snippet's gzip form and the ETags of both forms, made once: it is
// fetched by every page view that has no cached copy. Gzip takes its 4.5
// KB to about a third.
var (
	snippetGzip    = gzipped(snippetJS)
	snippetTag     = entityTag(snippetJS)
	snippetGzipTag = entityTag(snippetGzip)
)

// snippet serves the script gzipped to clients that accept it, with an
// ETag, so a browser revalidating after max-age gets a 304.
func snippet(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, "application/javascript; charset=utf-8")
	c.Set(fiber.HeaderVary, fiber.HeaderAcceptEncoding)
	if acceptsGzip(c.Get(fiber.HeaderAcceptEncoding)) {
		c.Set(fiber.HeaderContentEncoding, "gzip")
		return sendTagged(c, snippetGzip, snippetGzipTag)
	}
	return sendTagged(c, snippetJS, snippetTag)
}

// routePublic registers the public endpoints. They take no token: the
// bearer check is attached to the private routes one by one, never to /v1
// as a whole. The read-only badges also serve a private counter to a
// request with credentials (h.credentials), whose read keys checks
// (hitHandlers.read): their routes are named for both.
func routePublic(r router, h *hitHandlers) {
	noStore := publicHeaders("no-store")
	const orRead = publicRoute + "; read name with credentials"
	routes := []struct {
		path, name string
		handlers   []fiber.Handler
	}{
		{"/hits/:name", publicRoute, []fiber.Handler{noStore, h.hit}},
		{"/hits/:name/badge.svg", publicRoute, []fiber.Handler{noStore, h.badge(h.publicName, h.count, badgeQuery.send)}},
		{"/counters/:name/badge.svg", orRead, []fiber.Handler{noStore, h.credentials, h.badge(h.readableName, h.read, badgeQuery.send)}},
		{"/counters/:name/shields.json", orRead, []fiber.Handler{noStore, h.credentials, h.badge(h.readableName, h.read, badgeQuery.sendShields)}},
		{"/snippet.js", publicRoute, []fiber.Handler{publicHeaders(snippetCacheControl), snippet}},
	}
	for _, route := range routes {
		r.publicGet(route.path, route.name, route.handlers...)
	}
}

// publicPath reports whether path is one of the public endpoints' (those
// of routePublic), for the router's own answers there: a 405 for a method
// they do not serve gets their headers too (errorHandler), as openapi.yaml has
// every answer of theirs, so that a page's script can read the refusal.
// Looked at only for such an answer: a middleware of each path would be
// matched by every request, increments included.
func publicPath(path string) bool {
	if strings.HasPrefix(path, "/v1/hits/") || path == "/v1/snippet.js" {
		return true
	}
	return strings.HasPrefix(path, "/v1/counters/") && (strings.HasSuffix(path, "/badge.svg") || strings.HasSuffix(path, "/shields.json"))
}

// publicNames is how the public routes of other capabilities (history,
// breakdowns, live updates) ask page hits which names anyone may read,
// without reaching into its handlers: New hands them page hits' rule as
// router.public.
type publicNames interface {
	// publicName is the path's :name, percent-decoded, or the public
	// refusal of a name outside the public prefixes.
	publicName(c *fiber.Ctx) (string, error)
	// publicPrefix refuses a prefix that does not lie under a public one.
	publicPrefix(prefix string) error
}

// publicRule is page hits' rule of public names, the one publicNames.
type publicRule struct{ hits *hits.Service }

var _ publicNames = publicRule{}

// publicName is the :name of a public endpoint, refused unless it is under
// one of the public prefixes. It is checked before anything else about the
// request, so that a private name is 403 whatever else is wrong.
func (p publicRule) publicName(c *fiber.Ctx) (string, error) {
	name, err := pathName(c, "name")
	if err != nil {
		return "", err
	}
	if err := p.hits.Public(name); err != nil {
		return "", err
	}
	return name, nil
}

// publicPrefix implements publicNames with the page-hit rules.
func (p publicRule) publicPrefix(prefix string) error { return p.hits.Public(prefix) }

// PageHits is page hits' capability: a page view counted (GET
// /v1/hits/{name}), its badges, the read-only badges of any counter, and
// the snippet, by svc's rules; counters serves the read-only badges of a
// private name, today the badges' count of today (history.Service). Its
// rule of public names is the one the other capabilities' public routes
// ask (publicNames): New hands it to them, and routes page hits after
// every other capability, so that a static path of theirs under /hits
// (GET /v1/hits/breakdown) wins over page hits' parameter.
func PageHits(svc *hits.Service, counters counters.Service, today todayReader) Capability {
	return &pageHits{publicRule: publicRule{svc}, counters: counters, today: today}
}

type pageHits struct {
	publicRule
	counters counters.Service
	today    todayReader
}

func (p *pageHits) routes(r router) {
	routePublic(r, &hitHandlers{publicRule: p.publicRule, proxies: r.proxies, dbBudget: r.dbBudget, today: p.today,
		auth: r.auth, keys: r.keys, counters: p.counters})
	routeMe(r, p.hits) // the dashboard's first read, which says how page hits are counted (me.go)
}

// routedLast returns caps with the one that answers which names are
// public (page hits) last, and that one.
func routedLast(caps []Capability) ([]Capability, publicNames) {
	i := slices.IndexFunc(caps, func(c Capability) bool { _, ok := c.(publicNames); return ok })
	if i < 0 {
		panic("app: no capability answers which names are public (PageHits)")
	}
	out := append(slices.Delete(slices.Clone(caps), i, i+1), caps[i])
	return out, caps[i].(publicNames)
}

// allowOptions answers an OPTIONS request that is not a CORS preflight.
func allowOptions(c *fiber.Ctx) error {
	c.Set(fiber.HeaderAllow, "GET, HEAD, OPTIONS")
	return c.SendStatus(fiber.StatusNoContent)
}
