package app

import (
	"errors"
	"net"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"
)

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
