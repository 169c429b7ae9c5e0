package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/countersvc/countersvc/keys"
)

// An access is what a route needs of its caller, declared beside the
// route: the scope, and how the resource it touches (a counter name, a
// prefix, a board's company, a hook's target) is found in the request.
// The router checks it once, after authentication and before the handler,
// through keys.Service.Allow, which alone decides; no handler and no
// domain service checks a principal again. A private route that declares
// none does not start (router.private panics naming it), and
// TestEveryRouteDeclaresItsAccess holds every served route to a
// declaration.
//
// What an access parses to find its resource (a body, a looked-up
// resource) it keeps in the request's locals for the handler, so that
// nothing is parsed twice: the handler reads it with checked. The counter
// in the path's :name is the access of router.privateName, whose handler
// takes the checked name as its argument.
type access struct {
	desc  string // how the route table names it: "write name", "read prefix", ...
	check func(g gate) error
}

// gate is one request before its handler: what an access reads, and the
// one way it asks keys.
type gate struct {
	c    *fiber.Ctx
	keys *keys.Service
}

func (g gate) allow(a keys.Access, r keys.Resource) error {
	return g.keys.Allow(g.c.UserContext(), a, r)
}

// principal is who the request comes from (authenticate put it there).
func principal(c *fiber.Ctx) *keys.Principal { return keys.FromContext(c.UserContext()) }

// localChecked is the local an access leaves for its handler: the
// checked request, as the access parsed it.
const localChecked = "countersvc.checked"

// checked is the request an access parsed and checked (bodyAccess, and
// the accesses that look a resource up: a board, a hook).
func checked[T any](c *fiber.Ctx) T { return c.Locals(localChecked).(T) }

// checkName is the access a to the counter in the path's :name, which it
// returns once allowed. A write refuses the reserved names first
// (writableName), as the domain does, so that the answer says why.
func checkName(g gate, a keys.Access) (string, error) {
	name := func(c *fiber.Ctx) (string, error) { return pathName(c, "name") }
	if a == keys.Write {
		name = writableName
	}
	n, err := name(g.c)
	if err != nil {
		return "", err
	}
	return n, g.allow(a, keys.Name(n))
}

// prefixAccess is a to every counter under ?prefix=.
func prefixAccess(a keys.Access) access {
	return access{desc: accessWord(a) + " prefix", check: func(g gate) error {
		return g.allow(a, keys.Prefix(g.c.Query("prefix")))
	}}
}

// listing is what a list or an export of ?prefix= shows: a key with one
// prefix that names none lists its own, and a key that lists everything
// through "" never sees the reserved names.
type listing struct {
	prefix        string
	hidesReserved bool
}

// listAccess reads ?prefix= as the caller's listing (see listing).
func listAccess() access {
	return access{desc: "read listing", check: func(g gate) error {
		p := principal(g.c)
		prefix := p.ListPrefix(strings.Clone(g.c.Query("prefix")))
		if err := g.allow(keys.Read, keys.Prefix(prefix)); err != nil {
			return err
		}
		g.c.Locals(localChecked, listing{prefix: prefix, hidesReserved: p.HidesReserved(prefix)})
		return nil
	}}
}

// scopeAccess needs a's scope and names nothing yet: an import, whose
// lines are checked as they come (importHandlers), and the hooks' list,
// which shows each caller its own.
func scopeAccess(a keys.Access) access {
	return access{desc: accessWord(a) + " scope", check: func(g gate) error {
		return g.allow(a, keys.Anything())
	}}
}

// lookupAccess is the write scope on the target of the resource that the
// path's :id names (a hook, an annotation), which get looks up, under the
// route's budget, once the scope is there; the handler takes the resource
// with checked[T].
func lookupAccess[T any](desc string, budget dbBudget, get func(ctx context.Context, id int64) (T, error), target func(T) keys.Resource) access {
	return access{desc: desc, check: func(g gate) error {
		id, err := positiveParam(g.c, "id")
		if err != nil {
			return err
		}
		if err := g.allow(keys.Write, keys.Anything()); err != nil {
			return err
		}
		ctx, cancel := budget.dbContext(g.c)
		defer cancel()
		v, err := get(ctx, id)
		if err != nil {
			return err
		}
		if err := g.allow(keys.Write, target(v)); err != nil {
			return err
		}
		g.c.Locals(localChecked, v)
		return nil
	}}
}

// adminAccess is the API keys' own routes.
func adminAccess() access {
	return access{desc: "admin", check: func(g gate) error {
		return g.allow(keys.Write, keys.APIKeys())
	}}
}

// bodyAccess parses the body with parse (its errors are the client's, as
// the handler would give them) and has check ask allow about what the
// request names; check may say which part of the body a refusal is about.
// The handler takes the parsed request with checked[T].
func bodyAccess[T any](desc string, parse func(*fiber.Ctx) (T, error), check func(req T, allow func(keys.Access, keys.Resource) error) error) access {
	return access{desc: desc, check: func(g gate) error {
		req, err := parse(g.c)
		if err != nil {
			return err
		}
		if err := check(req, g.allow); err != nil {
			return err
		}
		g.c.Locals(localChecked, req)
		return nil
	}}
}

func accessWord(a keys.Access) string {
	if a == keys.Write {
		return "write"
	}
	return "read"
}

// router is how a capability adds its routes under /v1: each private one
// with its access, each public one marked public. Every route is named
// after its access ("private: write name", "public"), so that the served
// routes say what they need (fiber.App.GetRoutes).
type router struct {
	v1   fiber.Router
	auth func(*fiber.Ctx) error // authenticate
	keys *keys.Service

	// What the routes of every capability share.
	dbBudget
	proxies   trustedProxies
	drain     *Drain
	writeWait time.Duration // Options.WriteTimeout
	public    publicNames   // page hits' rule of public names, for other capabilities' public routes
	annotate  annotator     // annotations beside history and breakdowns (annotations=true); nil: none
}

// private adds a route that needs credentials and a.
func (r router) private(method, path string, a access, handlers ...fiber.Handler) {
	if a.check == nil {
		panic(fmt.Sprintf("app: the route %s /v1%s declares no access", method, path))
	}
	k, auth := r.keys, r.auth
	check := func(c *fiber.Ctx) error {
		if err := auth(c); err != nil {
			return err
		}
		if err := a.check(gate{c: c, keys: k}); err != nil {
			return err
		}
		return c.Next()
	}
	r.add(method, path, a.desc, append([]fiber.Handler{check}, handlers...))
}

// privateName adds a route that needs credentials and a to the counter in
// the path's :name (checkName), whose handler takes the checked name as
// its argument: the name reaches it without a Locals entry (an
// allocation to box the string, and a scan of the request's values to set
// and to read it) or a Fiber hop, about 100 ns of an increment.
func (r router) privateName(method, path string, a keys.Access, handler func(c *fiber.Ctx, name string) error) {
	k, auth := r.keys, r.auth
	r.add(method, path, accessWord(a)+" name", []fiber.Handler{func(c *fiber.Ctx) error {
		if err := auth(c); err != nil {
			return err
		}
		name, err := checkName(gate{c: c, keys: k}, a)
		if err != nil {
			return err
		}
		return handler(c, name)
	}})
}

// add registers a private route's chain, named after its access.
func (r router) add(method, path, desc string, chain []fiber.Handler) {
	if method == fiber.MethodGet {
		r.v1.Get(path, chain...).Name(privateRoute + desc) // and HEAD, as Get adds it
		return
	}
	r.v1.Add(method, path, chain...).Name(privateRoute + desc)
}

// publicGet adds a GET that answers without credentials, with its CORS
// preflight, named name (publicRoute, or what else it needs). Its own rule
// (the public prefixes) decides what it serves.
func (r router) publicGet(path, name string, handlers ...fiber.Handler) {
	r.v1.Get(path, handlers...).Name(name)
	r.v1.Options(path, handlers[0], preflight, allowOptions).Name(name)
}

// The route names' prefixes (TestEveryRouteDeclaresItsAccess).
const (
	privateRoute = "private: "
	publicRoute  = "public"
)
