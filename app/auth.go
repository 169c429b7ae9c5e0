package app

import (
	"strings"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/valyala/fasthttp"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// authenticate is the private routes' first step: it shows keys.Service
// the request's bearer and whether the client is on this machine, and puts
// the principal it answers into the request's context. What the principal
// may do is decided by keys alone, at the route (access.go), never by a
// handler.
//
// The request's context goes to keys as it is: keys bounds its own lookups
// (keys.Options.LookupTimeout), which most requests never make, so that
// they pay for no deadline timer of their own here.
func authenticate(k *keys.Service, proxies trustedProxies) func(*fiber.Ctx) error {
	return func(c *fiber.Ctx) error {
		authorization, forwarded := authHeaders(&c.Request().Header)
		token, other := bearer(authorization)
		// Where the client is matters only to a request without
		// credentials (keys.Credentials.Local): one with a bearer skips
		// its address.
		local := token == "" && !other && proxies.local(c, forwarded)
		p, err := k.Authenticate(c.UserContext(), keys.Credentials{Bearer: token, OtherScheme: other, Local: local})
		if err != nil {
			if counters.ErrorCode(err) == counters.EUNAUTHENTICATED {
				c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="counters"`)
			}
			return err
		}
		c.SetUserContext(keys.NewContext(c.UserContext(), p))
		return nil
	}
}

// authHeaders is what authenticate reads of the request's headers, in one
// pass over them instead of a lookup each (a lookup first copies and
// normalizes the name it looks for; four of them took about 100 ns of an
// increment): the first Authorization header, and whether a forwarding
// header came with a value (X-Forwarded-For, Forwarded, X-Real-IP, any
// of them, which trustedProxies.local refuses). fasthttp has normalized
// the names as the constants spell them. The value is Fiber's memory.
func authHeaders(h *fasthttp.RequestHeader) (authorization []byte, forwarded bool) {
	seen := false
	h.VisitAll(func(k, v []byte) {
		switch string(k) {
		case fiber.HeaderAuthorization:
			if !seen {
				authorization, seen = v, true
			}
		case fiber.HeaderXForwardedFor, fiber.HeaderForwarded, headerXRealIP:
			forwarded = forwarded || len(v) > 0
		}
	})
	return authorization, forwarded
}

// headerXRealIP is X-Real-IP as fasthttp normalizes it.
const headerXRealIP = "X-Real-Ip"

// bearer is the token of an Authorization value "Bearer <token>" (the
// scheme is case-insensitive), or "" without one; other reports a header
// of another scheme, which authenticates nobody. Used during the request
// only: it is Fiber's memory.
func bearer(authorization []byte) (token string, other bool) {
	h := strings.TrimSpace(utils.UnsafeString(authorization))
	scheme, token, _ := strings.Cut(h, " ")
	if strings.EqualFold(scheme, "Bearer") {
		// "Bearer " and nothing, as a script sends with its token variable
		// unset, is no credentials: a loopback client of a service without
		// a token is still served.
		return strings.TrimSpace(token), false
	}
	return "", h != ""
}
