package app

import (
	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/keys"
)

// meJSON is GET /v1/me: what the request's credentials may read, and how
// this service counts page hits. The dashboard reads it first: a 401 here
// is its one sign-in message; the prefixes are where its first page looks
// for sites and shops; the public prefixes tell a site (page-hit panels)
// from a shop (its own labels); the country database says whether the
// countries have a source to credit.
type meJSON struct {
	Admin           bool         `json:"admin"`
	Scopes          []keys.Scope `json:"scopes"`
	Prefixes        []string     `json:"prefixes"`
	PublicPrefixes  []string     `json:"public_prefixes"`
	CountryDatabase *string      `json:"country_database"`
}

func routeMe(r router, h *hits.Service) {
	r.private("GET", "/me", scopeAccess(keys.Read), func(c *fiber.Ctx) error {
		p := principal(c)
		me := meJSON{Admin: p.IsAdmin(), Scopes: p.Scopes(), Prefixes: p.Prefixes(), PublicPrefixes: h.PublicPrefixes()}
		if db := h.CountryDatabase(); db != "" {
			me.CountryDatabase = &db
		}
		c.Set(fiber.HeaderCacheControl, "no-store")
		return c.JSON(me)
	})
}
