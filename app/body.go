package app

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"log/slog"
	"math"
	"mime"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/gofiber/fiber/v2/utils"
	"github.com/valyala/fasthttp"

	"github.com/countersvc/countersvc/counters"
)

// Request bodies. An import may carry a million lines, so the server
// streams request bodies (fasthttp's StreamRequestBody) and the import
// reads its own as it comes. Every other request keeps the body limit
// (COUNTERS_BODY_LIMIT, 64 KiB), which streaming alone would lose: with it
// on, fasthttp v1.51 no longer refuses a body over MaxRequestBodySize but
// hands it over as a stream, and c.Body() reads a stream to its end,
// however long. Nor does fasthttp skip what a handler left unread: the next
// request on the connection would be parsed from the rest of the body. And
// before any handler runs it waits for the body's first 8 KiB (or all of a
// shorter one), so a client that announces too large a body and waits for
// the answer before sending it would wait for the read timeout.
//
// So, before fasthttp reads any of a body (its HeaderReceived hook):
//   - an import gets the import's read timeout, no size limit, and a
//     connection that closes after the answer (a refusal before the body
//     was read leaves it unread);
//   - any other request announcing more than the limit is marked, its
//     Content-Length set to 0 so that fasthttp reads none of it, and its
//     connection closed after the answer; readBody then answers 413.
//
// A connection closed with a body still arriving is reset by the kernel,
// and a client still sending then reads the reset, not the 413 (1 MiB
// uploads met resets). So readBody ends such a connection with
// closeAfterAnswer: the answer, then the rest of the body read and dropped.
//
// And before routing, readBody reads every body but an import's, up to the
// limit, into the request, where handlers find it as before.

// headerOversized marks a request whose announced body was over the limit.
// Such a request always has Connection: close (streamBodies sets it), so
// readBody looks for the mark only on those, and streamBodies removes a
// client's own header of that name only from a request that arrives with
// Connection: close: on any other its header is never looked at, and the
// keep-alive requests that make most of the traffic skip a search of
// their headers twice (about 0.1 µs a request).
const headerOversized = "X-Countersvc-Oversized-Body"

// streamsBody reports whether the request (by its method and request URI)
// is one whose handler reads its body as a stream: POST /v1/import.
func streamsBody(method, uri []byte) bool {
	if i := bytes.IndexByte(uri, '?'); i >= 0 {
		uri = uri[:i]
	}
	return string(method) == fiber.MethodPost && string(uri) == "/v1/import"
}

// streamBodies sets up the server for readBody.
func streamBodies(app *fiber.App, limit int, importTimeout time.Duration) {
	srv := app.Server()
	srv.HeaderReceived = func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
		if h.ConnectionClose() {
			h.Del(headerOversized)
		}
		if streamsBody(h.Method(), h.RequestURI()) {
			h.SetConnectionClose()
			return fasthttp.RequestConfig{ReadTimeout: importTimeout, MaxRequestBodySize: math.MaxInt}
		}
		if h.ContentLength() > limit {
			h.Set(headerOversized, "1")
			h.SetContentLength(0)
			h.SetConnectionClose()
			// No "100 Continue": a client that waits for it before
			// sending reads the 413 instead and sends nothing.
			h.Del(fiber.HeaderExpect)
		}
		return fasthttp.RequestConfig{}
	}
}

// drainLimit is how much of a body is read and dropped when it was not
// read to the end (a 413, an import refused before its body or cut short
// by MySQL failing mid-import), and drainTime how long that may take: a
// body left in the socket turns the connection's close into a reset, which
// reaches a client still sending as a broken pipe instead of the answer.
// Reading and dropping is cheap next to the body the client meant to send.
const (
	drainLimit = 256 << 20
	drainTime  = 5 * time.Second
)

// readBody reads the request's body, up to limit bytes, into the request
// (413 beyond), except an import's, which is left to stream, and then
// runs the route's handlers (handle).
func readBody(c *fiber.Ctx, limit int, log *slog.Logger) error {
	req := c.Request()
	if req.Header.ConnectionClose() && len(req.Header.Peek(headerOversized)) > 0 {
		closeAfterAnswer(c)
		return fiber.ErrRequestEntityTooLarge
	}
	stream := c.Context().RequestBodyStream()
	if streamsBody(req.Header.Method(), req.Header.RequestURI()) {
		body := &streamedBody{r: stream}
		c.Locals(streamedBodyKey, body)
		err := handle(c, log)
		// Only what the handler left unread: fasthttp's reader of a
		// chunked body, read to its end, blocks on a further read
		// instead of answering EOF again, which held every chunked
		// import's answer for drainTime.
		if stream != nil && !body.ended {
			c.Context().Conn().SetReadDeadline(time.Now().Add(drainTime))
			io.CopyN(io.Discard, stream, drainLimit)
		}
		return err
	}
	// The header's own accessors: Peek normalizes its key on each call.
	encoded := len(req.Header.ContentEncoding()) > 0
	if (stream == nil || req.Header.ContentLength() == 0) && !encoded {
		// Nothing to read (most increments), or fasthttp read it all.
		n := 0
		if stream == nil {
			n = len(req.Body())
		}
		if err := checkMediaType(c, n); err != nil {
			return err
		}
		if n > 0 {
			if err := checkText(req.Body()); err != nil {
				return err
			}
		}
		return handle(c, log)
	}
	var body io.Reader = stream
	if stream == nil {
		body = bytes.NewReader(req.Body())
	}
	// Unzipped within the limit too: a small gzip body can unzip to
	// gigabytes, which Fiber's c.Body() would unzip whole.
	body, closeBody, err := decodeBody(c, body)
	if err != nil {
		closeAfterAnswer(c)
		return err
	}
	defer closeBody()
	buf := bodyBuffers.Get().(*bytes.Buffer)
	defer bodyBuffers.Put(buf)
	buf.Reset()
	n, err := buf.ReadFrom(io.LimitReader(body, int64(limit)+1))
	if err != nil {
		closeAfterAnswer(c)
		if encoded {
			return counters.Wrap(counters.EINVALID, "app.readBody", err, "The request body is cut short or its gzip stream is corrupt.")
		}
		return counters.Wrap(counters.EINVALID, "app.readBody", err, "The request body could not be read to its end.")
	}
	if n > int64(limit) {
		closeAfterAnswer(c)
		return fiber.ErrRequestEntityTooLarge
	}
	if err := checkMediaType(c, buf.Len()); err != nil {
		return err
	}
	if err := checkText(buf.Bytes()); err != nil {
		return err
	}
	req.SetBody(buf.Bytes()) // a copy: the buffer goes back to the pool
	req.Header.Del(fiber.HeaderContentEncoding)
	return handle(c, log)
}

// checkMediaType refuses a body of n bytes whose Content-Type is neither
// JSON nor absent: 415 unsupported_media_type (openapi.yaml). JSON is
// application/json and any application/*+json, with any parameters. An
// import, whose body has its own types, never comes here.
func checkMediaType(c *fiber.Ctx, n int) error {
	if n == 0 {
		return nil
	}
	ct := utils.UnsafeString(c.Request().Header.ContentType()) // the header's own, as c.Get's, without a normalized key
	if ct == "" {
		return nil
	}
	if t, _, err := mime.ParseMediaType(ct); err == nil && (t == fiber.MIMEApplicationJSON || strings.HasPrefix(t, "application/") && strings.HasSuffix(t, "+json")) {
		return nil
	}
	return counters.Errorf(codeUnsupportedMediaType, "The request body must be JSON, sent with Content-Type: application/json (curl: --json) or none, not %q; nothing was changed.", ct)
}

// checkText refuses a body that is not text: bytes that are not UTF-8,
// or a \u escape of half a surrogate pair. encoding/json would turn
// either into U+FFFD, so that a name or a label the client never sent
// (and may be another, real one) would be written or reset; the contract
// has names and labels of valid UTF-8, anything else refused.
func checkText(body []byte) error {
	if !utf8.Valid(body) {
		return counters.Errorf(counters.EINVALID, "The request body is not valid UTF-8; nothing was changed.")
	}
	for i := bytes.IndexByte(body, '\\'); i >= 0 && i+1 < len(body); {
		next := i + 2 // past an escape of one character
		if body[i+1] == 'u' {
			r, ok := utf16Unit(body[i+2:])
			switch {
			case ok && utf16.IsSurrogate(r) && r < 0xdc00: // the first half: the second must follow
				r2, ok2 := rune(0), false
				if len(body) >= i+12 && body[i+6] == '\\' && body[i+7] == 'u' {
					r2, ok2 = utf16Unit(body[i+8:])
				}
				if !ok2 || utf16.DecodeRune(r, r2) == utf8.RuneError {
					return errHalfSurrogate()
				}
				next = i + 12
			case ok && utf16.IsSurrogate(r): // a second half without the first
				return errHalfSurrogate()
			}
		}
		j := bytes.IndexByte(body[min(next, len(body)):], '\\')
		if j < 0 {
			break
		}
		i = next + j
	}
	return nil
}

func errHalfSurrogate() error {
	return counters.Errorf(counters.EINVALID, "The request body escapes half of a UTF-16 surrogate pair (\\uD800 to \\uDFFF without its other half), which is no character; nothing was changed.")
}

// utf16Unit reads the four hex digits of a \u escape.
func utf16Unit(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 16)
	return rune(n), err == nil
}

// closeAfterAnswer makes the answer the connection's last, written by the
// connection's own goroutine (a hijack) so that it can then linger as web
// servers do (Apache's lingering close, net/http's closeWriteAndWait):
// after the answer it closes its writing side, so that the client reads
// the answer's end, and reads and drops what the client still sends, at
// most drainLimit bytes for at most drainTime, before the close. A close
// with the body still arriving would be a reset, which discards the
// answer from the client's socket before it read it. The answer itself is
// set as usual, by the handlers and the error handler.
func closeAfterAnswer(c *fiber.Ctx) {
	rc := c.Context()
	rc.Response.SetConnectionClose()
	rc.HijackSetNoResponse(true)
	rc.Hijack(func(conn net.Conn) {
		conn.SetWriteDeadline(time.Now().Add(drainTime))
		w := bufio.NewWriter(conn)
		if rc.Response.Write(w) != nil || w.Flush() != nil {
			return
		}
		raw := conn
		if u, ok := conn.(interface{ UnsafeConn() net.Conn }); ok { // fasthttp's hijacked connection
			raw = u.UnsafeConn()
		}
		if tcp, ok := raw.(interface{ CloseWrite() error }); ok {
			tcp.CloseWrite()
		}
		conn.SetReadDeadline(time.Now().Add(drainTime))
		io.CopyN(io.Discard, conn, drainLimit)
	})
}

// streamedBody is the body of a request that streams it (an import), as its
// handler reads it: it notes when the body ended.
type streamedBody struct {
	r     io.Reader // nil: no body
	ended bool
}

func (b *streamedBody) Read(p []byte) (int, error) {
	if b.r == nil {
		b.ended = true
		return 0, io.EOF
	}
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.ended = true
	}
	return n, err
}

// streamedBodyKey holds a streaming request's *streamedBody in
// fiber.Ctx.Locals.
const streamedBodyKey = "countersvc.streamedBody"

// requestStream is the body of a request that streams it, for its handler.
func requestStream(c *fiber.Ctx) io.Reader {
	if b, ok := c.Locals(streamedBodyKey).(*streamedBody); ok {
		return b
	}
	return bytes.NewReader(nil)
}

// decodeBody undoes the request's Content-Encoding on body: gzip, or none.
// The caller bounds what it reads, and calls closeBody when done.
func decodeBody(c *fiber.Ctx, body io.Reader) (decoded io.Reader, closeBody func(), err error) {
	switch enc := strings.ToLower(strings.TrimSpace(c.Get(fiber.HeaderContentEncoding))); enc {
	case "", "identity":
		return body, func() {}, nil
	case "gzip":
		gz, err := gzip.NewReader(body)
		if err == io.EOF {
			return bytes.NewReader(nil), func() {}, nil
		}
		if err != nil {
			return nil, nil, counters.Errorf(counters.EINVALID, "The request body is not gzip, though Content-Encoding says so; nothing was changed.")
		}
		return gz, func() { gz.Close() }, nil
	default:
		return nil, nil, counters.Errorf(counters.EINVALID, "Content-Encoding must be gzip or none, not %q; nothing was changed.", enc)
	}
}

// bodyBuffers hold bodies while readBody reads them.
var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}
