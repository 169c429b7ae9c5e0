package app

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/valyala/fasthttp"

	"github.com/countersvc/countersvc/counters"
)

// unmatched is the route label of a request that matched no route.
const unmatched = "unmatched"

// middleware is every request's one layer. It was five, each a Fiber
// c.Next() hop with its own bookkeeping (about 0.4 µs a request in all,
// BenchmarkMiddlewareServed); one function does the same, in the same
// order:
//   - gives the request its id (assignRequestID);
//   - reads its body within the limit (readBody);
//   - runs the route's handlers, a panic recovered (handle);
//   - writes an error through the error handler;
//   - records the route, status and latency in metrics and in the debug
//     log (record);
//   - while the process drains, asks the client to close its connection
//     after the answer. (Once fasthttp itself shuts down, its
//     CloseOnShutdown does the same for the requests still in flight.)
func middleware(log *slog.Logger, m *metrics, limit int, d *Drain) fiber.Handler {
	return func(c *fiber.Ctx) error {
		assignRequestID(c)
		start := startOf(c)
		if err := readBody(c, limit, log); err != nil {
			if herr := c.App().ErrorHandler(c, err); herr != nil {
				c.Status(fiber.StatusInternalServerError)
			}
		}
		// Only the middleware at "/" ran: no route matched (404, 405).
		route := c.Route().Path
		if route == "/" {
			route = unmatched
		}
		record(log, m, c, route, start)
		if d.Draining() {
			c.Response().Header.SetConnectionClose()
		}
		return nil
	}
}

// startOf is when the server began to handle the request: fasthttp's
// stamp, taken just before it calls the handler, rather than a clock
// read of our own (a clock read, wall and monotonic, took about 100 ns on
// the two-core machine's kvm-clock, 6% of a request's CPU through the
// application in memory). A request handed over another way (tests' RequestCtx.Init) has
// no stamp, and reads the clock.
func startOf(c *fiber.Ctx) time.Time {
	if t := c.Context().Time(); !t.IsZero() {
		return t
	}
	return time.Now()
}

// handle runs the route's handlers and recovers a panic among them as
// Fiber's recover middleware does: the panic's value becomes the
// request's error (an error as itself, anything else as its text, which
// the error handler answers 500 internal), logged with its stack.
func handle(c *fiber.Ctx, log *slog.Logger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			logPanic(log, c, r)
			var ok bool
			if err, ok = r.(error); !ok {
				err = fmt.Errorf("%v", r)
			}
		}
	}()
	return c.Next()
}

// unrouted wraps the error handler for the answers Fiber gives before any
// middleware runs (a body over the limit, headers too large, a read
// timeout) and for unknown methods: they too get a request id and are
// counted and logged like every other answer. A request that went through
// the middleware already has its id.
func unrouted(log *slog.Logger, m *metrics, h fiber.ErrorHandler) fiber.ErrorHandler {
	return func(c *fiber.Ctx, err error) error {
		if hasRequestID(c) {
			return h(c, err)
		}
		start := time.Now()
		assignRequestID(c)
		herr := h(c, err)
		record(log, m, c, unmatched, start)
		return herr
	}
}

// record counts a finished request and logs it at debug level.
func record(log *slog.Logger, m *metrics, c *fiber.Ctx, route string, start time.Time) {
	status := c.Response().StatusCode()
	elapsed := time.Since(start)
	method := methodLabel(c.Method())
	series := m.of(method, route, status)
	series.requests.Inc()
	series.latency.Observe(elapsed.Seconds())
	if log.Enabled(c.UserContext(), slog.LevelDebug) {
		log.Debug("request", "request_id", requestID(c), "method", method, "path", c.Path(),
			"status", status, "duration_ms", float64(elapsed.Microseconds())/1000)
	}
}

// methodLabel is the method as a metric label: Fiber's own constant for
// it, not the request's bytes (the metrics keep their labels, and Fiber's
// request buffer is reused), and "OTHER" for a method HTTP does not
// define, so that clients cannot mint label values.
func methodLabel(method string) string {
	if m, ok := knownMethod(method); ok {
		return m
	}
	return "OTHER"
}

// knownMethod is Fiber's own constant for a method it knows (those of
// fiber.DefaultMethods), and whether it knows it: a switch, which
// compares the bytes without a copy or a loop over the list.
func knownMethod(method string) (string, bool) {
	switch method {
	case fiber.MethodGet:
		return fiber.MethodGet, true
	case fiber.MethodHead:
		return fiber.MethodHead, true
	case fiber.MethodPost:
		return fiber.MethodPost, true
	case fiber.MethodPut:
		return fiber.MethodPut, true
	case fiber.MethodDelete:
		return fiber.MethodDelete, true
	case fiber.MethodConnect:
		return fiber.MethodConnect, true
	case fiber.MethodOptions:
		return fiber.MethodOptions, true
	case fiber.MethodTrace:
		return fiber.MethodTrace, true
	case fiber.MethodPatch:
		return fiber.MethodPatch, true
	}
	return "", false
}

// rejectMalformedRequestLines answers, in the contract's JSON error shape
// and before any middleware runs, two request lines that Fiber would
// mishandle:
//   - a method Fiber does not know (FOO, PROPFIND): 501. Fiber itself
//     answers those in plain text, before any middleware or error handler.
//   - a request target with a raw space or control character
//     ("POST /v1/counters/bad name/increment HTTP/1.1"): 400. RFC 9112 3.2
//     allows none, but fasthttp takes everything up to the line's last
//     space as the target, and the space became part of a counter's name.
func rejectMalformedRequestLines(app *fiber.App) {
	srv := app.Server()
	next := srv.Handler
	srv.Handler = func(rc *fasthttp.RequestCtx) {
		_, known := knownMethod(utils.UnsafeString(rc.Method()))
		target := validTarget(rc.Request.Header.RequestURI())
		if known && target {
			next(rc)
			return
		}
		c := app.AcquireCtx(rc)
		defer app.ReleaseCtx(c)
		var err error = fiber.ErrNotImplemented
		if known {
			if rc.Request.Header.ContentLength() != 0 {
				closeAfterAnswer(c) // its body is never read
			}
			err = counters.Errorf(counters.EINVALID, "The request line's target has a raw space or control character: percent-encode it (a space is %%20).")
		}
		if err := app.ErrorHandler(c, err); err != nil {
			c.Status(fiber.StatusInternalServerError)
		}
	}
}

// validTarget reports whether a request target has no byte that RFC 9112
// forbids there unencoded: spaces, control characters and DEL.
func validTarget(uri []byte) bool {
	for _, b := range uri {
		if b <= ' ' || b == 0x7f {
			return false
		}
	}
	return true
}

// logPanic logs a handler's panic with the stack that raised it.
func logPanic(log *slog.Logger, c *fiber.Ctx, e any) {
	log.Error("panic", "request_id", requestID(c), "path", c.Path(), "panic", fmt.Sprint(e), "stack", string(debug.Stack()))
}
