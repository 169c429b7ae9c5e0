package app

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"countersvc/counters"
	"countersvc/keys"
)

// authenticate is the private routes' first handler: it shows keys.Service
// the request's bearer and whether the client is on this machine, and puts
// the principal it answers into the request's context. What the principal
// may do is decided by keys alone (its guards of the counters and tickets,
// and of the keys themselves), never by a handler.
func authenticate(k *keys.Service, proxies trustedProxies, budget dbBudget) fiber.Handler {
	return func(c *fiber.Ctx) error {
		ctx, cancel := budget.dbContext(c)
		token, other := bearer(c)
		p, err := k.Authenticate(ctx, keys.Credentials{Bearer: token, OtherScheme: other, Local: proxies.local(c)})
		cancel()
		if err != nil {
			if counters.ErrorCode(err) == counters.EUNAUTHENTICATED {
				c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="counters"`)
			}
			return err
		}
		c.SetUserContext(keys.NewContext(c.UserContext(), p))
		return c.Next()
	}
}

// bearer is the token of "Authorization: Bearer <token>" (the scheme is
// case-insensitive), or "" without one; other reports a header of another
// scheme, which authenticates nobody. Used during the request
// only: it is Fiber's memory.
func bearer(c *fiber.Ctx) (token string, other bool) {
	h := strings.TrimSpace(c.Get(fiber.HeaderAuthorization))
	scheme, token, _ := strings.Cut(h, " ")
	if strings.EqualFold(scheme, "Bearer") {
		// "Bearer " and nothing, as a script sends with its token variable
		// unset, is no credentials: a loopback client of a service without
		// a token is still served.
		return strings.TrimSpace(token), false
	}
	return "", h != ""
}
