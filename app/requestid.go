package app

import (
	crand "crypto/rand"
	"encoding/base32"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
)

// requestIDKey holds the request's id in fiber.Ctx.Locals.
const requestIDKey = "requestid"

// maxRequestIDLen bounds a client-sent X-Request-ID: long enough for a UUID,
// a trace id or our own ids, short enough to keep logs and labels tidy.
const maxRequestIDLen = 64

// assignRequestID gives the request an id, answered in X-Request-ID and
// written in its log lines. A client's own X-Request-ID is kept only when it
// is short and of safe characters: it goes into logs verbatim, and quotes,
// spaces or kilobytes there would let a client forge or bloat them. Fresh
// ids are random (128 bits), not a counter: they must not tell one client
// how many requests others made, nor be guessable.
func assignRequestID(c *fiber.Ctx) {
	id := c.Get(fiber.HeaderXRequestID)
	if validRequestID(id) {
		id = strings.Clone(id)
	} else {
		id = newRequestID()
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

// requestIDSources are ChaCha8 generators, each seeded from crypto/rand:
// a cryptographically strong stream, drawn without a system call per
// request as crypto/rand.Text makes (about 1.3% of the service's CPU under
// increments).
var requestIDSources = sync.Pool{New: func() any {
	var seed [32]byte
	crand.Read(seed[:]) // never fails (crypto/rand.Read's contract)
	return rand.NewChaCha8(seed)
}}

// requestIDEncoding spells 128 bits in 26 characters, as crypto/rand.Text.
var requestIDEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newRequestID is a fresh random id: 128 bits in base32.
func newRequestID() string {
	src := requestIDSources.Get().(*rand.ChaCha8)
	var b [16]byte
	src.Read(b[:])
	requestIDSources.Put(src)
	return requestIDEncoding.EncodeToString(b[:])
}

func requestID(c *fiber.Ctx) string {
	id, _ := c.Locals(requestIDKey).(string)
	return id
}
