package app

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/middleware/adaptor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/countersvc/countersvc/counters"
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
	// Detail says why MySQL is not_synced: what the check reported.
	Detail string `json:"detail,omitempty"`
}

// checkTimeout is each dependency's own deadline in /readyz.
const checkTimeout = time.Second

// readyz is 503 when MySQL is down or not synced (a Galera node that is not
// Synced in its cluster's Primary component), or the process is draining:
// without Redis the service still answers everything, reads come from MySQL. The checks run concurrently,
// each with its own deadline: a hung MySQL that used up a shared one made
// Redis look down too.
func (h *opsHandlers) readyz(c *fiber.Ctx) error {
	c.Set(fiber.HeaderCacheControl, "no-store")
	parent := c.UserContext()
	var redisErr error
	var wg sync.WaitGroup
	if h.redis != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			redisErr = check(parent, h.redis)
		}()
	}
	mysqlErr := check(parent, h.mysql)
	wg.Wait()

	r := readiness{Status: "ok", MySQL: "ok", Redis: "disabled"}
	if mysqlErr != nil {
		r.Status, r.MySQL = "unavailable", "down"
		// An error with a client-safe message is a state the server
		// reported (a Galera node not Synced): it answers, yet is not ready.
		var reported *counters.Error
		if errors.As(mysqlErr, &reported) {
			r.MySQL, r.Detail = "not_synced", reported.Message
		}
	}
	if h.redis != nil {
		r.Redis = "ok"
		if redisErr != nil {
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
		setRetryAfter(c)
		c.Status(fiber.StatusServiceUnavailable)
	}
	return c.JSON(r)
}

// check runs one readiness check under its own deadline; a missing check
// counts as down.
func check(parent context.Context, f func(context.Context) error) error {
	if f == nil {
		return errors.New("no check")
	}
	ctx, cancel := context.WithTimeout(parent, checkTimeout)
	defer cancel()
	return f(ctx)
}

func (h *opsHandlers) metrics() fiber.Handler {
	return adaptor.HTTPHandler(promhttp.HandlerFor(h.registry, promhttp.HandlerOpts{}))
}
