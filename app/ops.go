package app

import (
	"context"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type opsHandlers struct {
	mysql    func(context.Context) error
	redis    func(context.Context) error
	registry *prometheus.Registry
	drain    *Drain
}

func (h *opsHandlers) healthz(c *fiber.Ctx) error {
	return c.JSON(fiber.Map{"status": "ok"})
}

type readiness struct {
	Status string `json:"status"`
	MySQL  string `json:"mysql"`
	Redis  string `json:"redis"`
}

// readyz is 503 when MySQL is down or the process is draining: without
// Redis the service still answers everything, reads come from MySQL.
func (h *opsHandlers) readyz(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	ctx, cancel := context.WithTimeout(c.UserContext(), time.Second)
	defer cancel()
	r := readiness{Status: "ok", MySQL: "ok", Redis: "disabled"}
	if h.mysql == nil || h.mysql(ctx) != nil {
		r.Status, r.MySQL = "unavailable", "down"
	}
	if h.redis != nil {
		r.Redis = "ok"
		if h.redis(ctx) != nil {
			r.Redis = "down"
			if r.Status == "ok" {
				r.Status = "degraded"
			}
		}
	}
	if h.drain.Draining() {
		r.Status = "draining"
	}
	if r.MySQL != "ok" || r.Status == "draining" {
		c.Status(fiber.StatusServiceUnavailable)
	}
	return c.JSON(r)
}

func (h *opsHandlers) metrics() fiber.Handler {
	return adaptor.HTTPHandler(promhttp.HandlerFor(h.registry, promhttp.HandlerOpts{}))
}
