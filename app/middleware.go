package app

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"countersvc/counters"
)

// observe writes errors through the error handler, then records the
// request's route, status and latency in metrics and in the debug log.
func observe(log *slog.Logger, m *metrics) fiber.Handler {
	return func(c *fiber.Ctx) error {
		start := time.Now()
		if err := c.Next(); err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				c.Status(fiber.StatusInternalServerError)
			}
		}
		status := c.Response().StatusCode()
		route := c.Route().Path
		if status == fiber.StatusNotFound && route == "/" {
			route = "unmatched"
		}
		elapsed := time.Since(start)
		// The metrics keep their labels: copy the method out of Fiber's
		// reused request buffer.
		method := strings.Clone(c.Method())
		m.requests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
		m.latency.WithLabelValues(method, route).Observe(elapsed.Seconds())
		if log.Enabled(c.UserContext(), slog.LevelDebug) {
			log.Debug("request", "request_id", requestID(c), "method", c.Method(), "path", c.Path(),
				"status", status, "duration_ms", float64(elapsed.Microseconds())/1000)
		}
		return nil
	}
}

// bearerAuth demands "Authorization: Bearer <token>" when token is set.
func bearerAuth(token string) fiber.Handler {
	want := []byte("Bearer " + token)
	return func(c *fiber.Ctx) error {
		if token == "" {
			return c.Next()
		}
		got := c.Request().Header.Peek(fiber.HeaderAuthorization)
		if subtle.ConstantTimeCompare(got, want) != 1 {
			c.Set(fiber.HeaderWWWAuthenticate, `Bearer realm="counters"`)
			return counters.Errorf(counters.EUNAUTHENTICATED, "A valid bearer token is required.")
		}
		return c.Next()
	}
}

func logPanic(log *slog.Logger) func(*fiber.Ctx, any) {
	return func(c *fiber.Ctx, e any) {
		log.Error("panic", "request_id", requestID(c), "path", c.Path(), "panic", fmt.Sprint(e))
	}
}
