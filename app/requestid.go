package app

import (
	"crypto/rand"
	"strings"

	"github.com/gofiber/fiber/v2"
)

// requestIDKey holds the request's id in fiber.Ctx.Locals.
const requestIDKey = "requestid"

// maxRequestIDLen bounds a client-sent X-Request-ID: long enough for a UUID,
// a trace id or our own ids, short enough to keep logs and labels tidy.
const maxRequestIDLen = 64

// requestIDs gives every request an id, answered in X-Request-ID and
// written in its log lines. A client's own X-Request-ID is kept only when it
// is short and of safe characters: it goes into logs verbatim, and quotes,
// spaces or kilobytes there would let a client forge or bloat them. Fresh
// ids are random (128 bits), not a counter: they must not tell one client
// how many requests others made, nor be guessable.
func requestIDs(c *fiber.Ctx) error {
	assignRequestID(c)
	return c.Next()
}

func assignRequestID(c *fiber.Ctx) {
	id := c.Get(fiber.HeaderXRequestID)
	if validRequestID(id) {
		id = strings.Clone(id)
	} else {
		id = rand.Text()
	}
	c.Set(fiber.HeaderXRequestID, id)
	c.Locals(requestIDKey, id)
}

// validRequestID: 1 to 64 of A-Z a-z 0-9 and - _ . : + / =, which covers
// UUIDs, hex and base64 trace ids.
func validRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch b := id[i]; {
		case 'a' <= b && b <= 'z', 'A' <= b && b <= 'Z', '0' <= b && b <= '9':
		case strings.IndexByte("-_.:+/=", b) >= 0:
		default:
			return false
		}
	}
	return true
}

func requestID(c *fiber.Ctx) string {
	id, _ := c.Locals(requestIDKey).(string)
	return id
}
