package app

import (
	"embed"
	"mime"
	"path"

	"github.com/gofiber/fiber/v2"
)

// dashboardFiles is the dashboard (GET /dashboard): plain HTML, CSS and
// JavaScript embedded in the binary, so nothing is built or fetched at run
// time. The page calls the public API with the key the user types in.
//
//go:embed dashboard/index.html dashboard/dashboard.js dashboard/dashboard.css
var dashboardFiles embed.FS

// dashboardPolicy lets the page run only its own script and talk only to
// this service: no inline script, no third-party anything, no framing.
const dashboardPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

// routeDashboard serves the page at /dashboard and its files under it.
func routeDashboard(app *fiber.App) {
	app.Get("/dashboard", dashboardFile("index.html"))
	app.Get("/dashboard/*", func(c *fiber.Ctx) error { return dashboardFile(c.Params("*"))(c) })
}

func dashboardFile(name string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		body, err := dashboardFiles.ReadFile("dashboard/" + path.Clean("/" + name)[1:])
		if err != nil {
			return fiber.ErrNotFound
		}
		c.Set(fiber.HeaderContentType, mime.TypeByExtension(path.Ext(name)))
		c.Set(fiber.HeaderContentSecurityPolicy, dashboardPolicy)
		c.Set(fiber.HeaderXContentTypeOptions, "nosniff")
		c.Set(fiber.HeaderReferrerPolicy, "no-referrer")
		c.Set(fiber.HeaderCacheControl, "no-cache")
		return c.Send(body)
	}
}
