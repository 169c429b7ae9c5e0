package app

import (
	"io"
	"log/slog"
	"net"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttputil"
)

// BenchmarkMiddleware is what the middleware costs a request: one through
// the whole application, in memory (no socket), to a route that does
// nothing, without a body and with a small JSON one as increments send.
func BenchmarkMiddleware(b *testing.B) {
	a := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Capabilities: []Capability{PageHits(nil, nil, nil)}})
	a.Get("/bench", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })
	a.Post("/bench", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })
	h := a.Handler()
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4000}
	for _, bc := range []struct {
		name   string
		method string
		body   string
	}{
		{"GET", fiber.MethodGet, ""},
		{"POST-JSON", fiber.MethodPost, `{"by":1}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			var req fasthttp.Request
			req.Header.SetMethod(bc.method)
			req.SetRequestURI("/bench")
			if bc.body != "" {
				req.Header.SetContentType(fiber.MIMEApplicationJSON)
				req.SetBodyString(bc.body)
			}
			var rc fasthttp.RequestCtx
			b.ReportAllocs()
			for b.Loop() {
				rc.Init(&req, addr, nil)
				h(&rc)
				if rc.Response.StatusCode() != fiber.StatusNoContent {
					b.Fatalf("status %d", rc.Response.StatusCode())
				}
			}
		})
	}
}

// BenchmarkMiddlewareServed is BenchmarkMiddleware's GET through fasthttp's
// server, over an in-memory listener: the server stamps each request's
// time, as in the service. Its client's work is counted too.
func BenchmarkMiddlewareServed(b *testing.B) {
	a := New(Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Capabilities: []Capability{PageHits(nil, nil, nil)}})
	a.Get("/bench", func(c *fiber.Ctx) error { return c.SendStatus(fiber.StatusNoContent) })
	ln := fasthttputil.NewInmemoryListener()
	go a.Listener(ln)
	defer a.Shutdown()
	client := &fasthttp.HostClient{Addr: "bench", Dial: func(string) (net.Conn, error) { return ln.Dial() }}
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	req.SetRequestURI("http://bench/bench")
	b.ReportAllocs()
	for b.Loop() {
		if err := client.Do(req, resp); err != nil || resp.StatusCode() != fiber.StatusNoContent {
			b.Fatalf("status %d, %v", resp.StatusCode(), err)
		}
	}
}
