package app

import (
	crand "crypto/rand"
	"encoding/base32"
	"math/rand/v2"
	"strings"
	"sync"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
)

// headerRequestID is X-Request-ID as fasthttp writes it (its canonical
// form), so that setting it needs no normalizing copy of the name.
var headerRequestID = []byte("X-Request-Id")

// maxRequestIDLen bounds a client-sent X-Request-ID: long enough for a UUID,
// a trace id or our own ids, short enough to keep logs and labels tidy.
const maxRequestIDLen = 64

// assignRequestID gives the request an id, answered in X-Request-ID and
// written in its log lines. A client's own X-Request-ID is kept only when it
// is short and of safe characters: it goes into logs verbatim, and quotes,
// spaces or kilobytes there would let a client forge or bloat them. Fresh
// ids are random (128 bits), not a counter: they must not tell one client
// how many requests others made, nor be guessable.
//
// The answer's header is where the id lives for the rest of the request
// (requestID reads it back): no string, no fiber.Ctx.Locals entry, which
// every later Locals and UserContext call would scan past.
func assignRequestID(c *fiber.Ctx) {
	h := &c.Response().Header
	if id := c.Request().Header.Peek(fiber.HeaderXRequestID); validRequestID(utils.UnsafeString(id)) {
		h.SetCanonical(headerRequestID, id) // a copy
		return
	}
	var b [requestIDLen]byte
	h.SetCanonical(headerRequestID, appendRequestID(b[:0]))
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

// requestIDLen is the length of a fresh id: 128 bits in base32.
const requestIDLen = 26

// appendRequestID appends a fresh random id to dst: 128 bits in base32.
func appendRequestID(dst []byte) []byte {
	src := requestIDSources.Get().(*rand.ChaCha8)
	var b [16]byte
	src.Read(b[:])
	requestIDSources.Put(src)
	return requestIDEncoding.AppendEncode(dst, b[:])
}

// newRequestID is a fresh random id as a string.
func newRequestID() string { return string(appendRequestID(nil)) }

// requestID is the request's id (assignRequestID), or "" before it has
// one.
func requestID(c *fiber.Ctx) string {
	return string(c.Response().Header.PeekBytes(headerRequestID))
}

// hasRequestID reports whether the request has its id already.
func hasRequestID(c *fiber.Ctx) bool {
	return len(c.Response().Header.PeekBytes(headerRequestID)) > 0
}
