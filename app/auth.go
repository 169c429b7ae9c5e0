package app

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// authenticate is the private routes' first handler: it shows keys.Service
// the request's bearer and whether the client is on this machine, and puts
// the principal it answers into the request's context. What the principal
// may do is decided by keys alone (its guards of the counters and tickets,
// and of the keys themselves), never by a handler.
//
// The request's context goes to keys as it is: keys bounds its own lookups
// (keys.Options.LookupTimeout), which most requests never make, so that
// they pay for no deadline timer of their own here.
func authenticate(k *keys.Service, proxies trustedProxies) fiber.Handler {
	return func(c *fiber.Ctx) error {
		token, other := bearer(c)
		p, err := k.Authenticate(c.UserContext(), keys.Credentials{Bearer: token, OtherScheme: other, Local: proxies.local(c)})
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
