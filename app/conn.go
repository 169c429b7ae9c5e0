package app

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

// Drain tells the HTTP layer that the process is stopping (SIGTERM): from
// Start on, /readyz answers 503 so that load balancers stop sending, and
// every answer carries "Connection: close" so that each client's next
// request opens a new connection instead of riding a keep-alive one that
// the process will close. Live-update streams end at once (see done). The
// zero value is not draining.
type Drain struct {
	on     atomic.Bool
	once   sync.Once
	closed chan struct{}
}

// Start begins the drain; it cannot be undone.
func (d *Drain) Start() {
	if d.on.CompareAndSwap(false, true) {
		d.done()
		close(d.closed)
	}
}

// done is closed when the drain starts: a live-update stream never ends by
// itself, so the server's shutdown would wait for each one (gofiber #1225)
// unless its writer watches this. Ending them when the drain starts, rather
// than at the shutdown after it, lets their clients reconnect to a process
// that stays while this one still answers. A nil Drain never closes it.
func (d *Drain) done() <-chan struct{} {
	if d == nil {
		return nil
	}
	d.once.Do(func() { d.closed = make(chan struct{}) })
	return d.closed
}

// Draining reports whether Start was called; a nil Drain never drains.
func (d *Drain) Draining() bool { return d != nil && d.on.Load() }

// closeSilentlyOnTimeout makes a connection whose request did not arrive in
// time close without an answer, as net/http does. fasthttp would answer
// such a connection through the error handler: Fiber turns the timeout
// into 408, which the contract has no code for (so 500 "internal"). The
// connections this hits are idle rather than broken: a fresh connection
// that never sent a byte within the read timeout (Go's client dials spare
// connections and parks them unused), or a client that stopped half way.
// An answer nobody asked for is worse than none: Go's client logs
// "Unsolicited response received on idle HTTP channel", and a client that
// writes its next request at that moment takes the 500 as its answer.
// A keep-alive connection idle past the idle timeout is already closed
// silently by fasthttp.
func closeSilentlyOnTimeout(app *fiber.App) {
	srv := app.Server()
	srv.CloseOnShutdown = true
	answer := srv.ErrorHandler
	srv.ErrorHandler = func(ctx *fasthttp.RequestCtx, err error) {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			// fasthttp still writes the (empty) response afterwards, to a
			// closed connection: nothing reaches the client.
			ctx.Conn().Close()
			return
		}
		answer(ctx, err)
	}
}
