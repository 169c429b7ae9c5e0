package app

import (
	"bufio"
	"context"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/keys"
	"github.com/countersvc/countersvc/live"
)

// DefaultHeartbeat is how often an idle stream sends a comment: the
// contract (openapi.yaml, docs/live-updates.md) promises one at least every
// 15 seconds, so that proxies keep idle streams open. A client that went
// away is not found by it (see watchPeer) but one that stopped reading is:
// the heartbeat's write then fails past the write deadline.
const DefaultHeartbeat = 15 * time.Second

// liveRetry is the reconnection delay the streams suggest (retry:), in
// milliseconds: soon enough to miss little, late enough that a whole
// audience reconnecting to a restarted process is spread out.
const liveRetry = 2000

// liveHandlers serves the streams of docs/live-updates.md. The rules
// (what is sent, when, the caps) are package live's; these handlers read
// the request, write the events and keep the connection alive.
type liveHandlers struct {
	dbBudget
	hub       liveOpener
	keys      *keys.Service
	public    publicNames
	proxies   trustedProxies
	drain     *Drain
	heartbeat time.Duration
	writeWait time.Duration // how long a client may take to accept one write before it is dropped
}

// liveOpener opens live-update streams (live.Hub).
type liveOpener interface {
	Counter(ctx context.Context, r live.Request) (*live.Stream, error)
	Prefix(ctx context.Context, r live.Request) (*live.Stream, error)
}

// Live is the live updates capability: a counter's stream and a prefix's
// need read access to the name or prefix, as reads do; the public
// page-hit stream needs a public name. heartbeat <= 0 is DefaultHeartbeat.
func Live(hub liveOpener, heartbeat time.Duration) Capability {
	if heartbeat <= 0 {
		heartbeat = DefaultHeartbeat
	}
	return capabilityFunc(func(r router) {
		h := &liveHandlers{dbBudget: r.dbBudget, hub: hub, keys: r.keys, public: r.public, proxies: r.proxies, drain: r.drain,
			heartbeat: heartbeat, writeWait: r.writeWait}
		r.publicGet("/hits/:name/events", publicRoute, publicHeaders("no-store"), h.hit)
		r.privateName("GET", "/counters/:name/events", keys.Read, h.counter)
		r.private("GET", "/events", streamPrefixAccess(), h.prefix)
	})
}

// streamPrefixAccess is read access to ?prefix=, which a stream must
// give: every counter at once is no stream.
func streamPrefixAccess() access {
	return access{desc: "read prefix", check: func(g gate) error {
		prefix := strings.Clone(g.c.Query("prefix"))
		if prefix == "" {
			return counters.Errorf(counters.EINVALID, "The prefix query parameter is required and must not be empty.")
		}
		g.c.Locals(localChecked, prefix)
		return g.allow(keys.Read, keys.Prefix(prefix))
	}}
}

// counter is a counter's stream; a counter that does not exist is 404
// (only the public page-hit streams stream a missing one).
func (h *liveHandlers) counter(c *fiber.Ctx, name string) error {
	return h.open(c, h.hub.Counter, live.Request{Name: name})
}

func (h *liveHandlers) prefix(c *fiber.Ctx) error {
	return h.open(c, h.hub.Prefix, live.Request{Prefix: checked[string](c)})
}

// hit is the public page-hit stream: it counts no hit, and a page with no
// hit yet streams 0.
func (h *liveHandlers) hit(c *fiber.Ctx) error {
	name, err := h.public.publicName(c)
	if err != nil {
		return err
	}
	return h.open(c, h.hub.Counter, live.Request{Name: name, Missing: true})
}

// open opens the stream with the request's address and Last-Event-ID, and
// answers an error before the stream starts (404, 403, 429) as JSON.
func (h *liveHandlers) open(c *fiber.Ctx, opener func(context.Context, live.Request) (*live.Stream, error), r live.Request) error {
	r.Addr = hits.ClientKey(h.proxies.clientAddr(c))
	r.LastEventID = strings.Clone(c.Get("Last-Event-ID"))
	ctx, cancel := h.dbContext(c)
	s, err := opener(ctx, r)
	cancel()
	if err != nil {
		return err
	}
	if h.drain.Draining() {
		s.Close()
		return counters.Errorf(counters.EUNAVAILABLE, "The service is shutting down; connect again.")
	}
	c.Set(fiber.HeaderContentType, "text/event-stream; charset=utf-8")
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set("X-Accel-Buffering", "no") // nginx would otherwise hold events back in its buffer
	if c.Method() == fiber.MethodHead {
		s.Close()
		return nil
	}
	// The request was authenticated once, at its start; the stream goes on
	// reading long after. It ends once its key may no longer be used
	// (revoked by any process, or expired), within the bound of the key's
	// requests' refusal: a revoked key reads nothing more (docs/keys.md). Keys
	// cannot be edited, so what a key may read never narrows otherwise.
	// A public stream, the admin's, a loopback client's: never revoked.
	revoked, unwatch := h.keys.Watch(principal(c))
	// The stream takes the connection over (Hijack) once the middleware
	// has set every header: its goroutine is the one goroutine the stream
	// costs, writing to the socket itself. fasthttp's own body stream
	// (SetBodyStreamWriter) costs a second goroutine, a pipe and a copy of
	// every event: 452 MiB for 10,000 idle streams, against 187 MiB so
	// (scripts/bench -scenario live). A hijacked connection is also
	// outside fasthttp's WriteTimeout (set once per answer, it would end
	// every stream) and outside its shutdown, which would otherwise wait
	// for each stream (gofiber #1225): the drain and the hub's Close end
	// them instead.
	rc := c.Context()
	rc.Response.Header.SetContentLength(-1) // chunked: the end of the stream is told, not guessed
	rc.Response.SetConnectionClose()
	rc.HijackSetNoResponse(true)
	rc.Hijack(func(conn net.Conn) { h.serve(rc, conn, s, revoked, unwatch) })
	return nil
}

// serve writes the stream s to conn until the client leaves, the drain
// starts, the hub closes or the stream's key is revoked (unwatch ends
// the watch of it).
func (h *liveHandlers) serve(rc *fasthttp.RequestCtx, conn net.Conn, s *live.Stream, revoked <-chan struct{}, unwatch func()) {
	defer s.Close()
	defer unwatch()
	gone := watchPeer(conn)
	defer func() {
		// fasthttp releases the connection's reader to its pool once
		// serve returns: the watcher must have stopped reading by then.
		conn.SetReadDeadline(time.Now())
		<-gone
	}()
	cw := &chunked{conn: conn}
	w := bufio.NewWriterSize(cw, 1024)
	// The write deadline moves at each heartbeat, not at each write (a
	// deadline is a timer to reset: per event, a thousand streams on a
	// hot counter paid for ten thousand a second). A client that stops
	// reading is dropped within a heartbeat and writeWait, and the
	// conflating slots hold what it missed meanwhile, never more.
	extend := func() { conn.SetWriteDeadline(time.Now().Add(h.heartbeat + h.writeWait)) }
	extend()
	if _, err := conn.Write(rc.Response.Header.Header()); err != nil {
		return
	}
	w.WriteString("retry: " + strconv.Itoa(liveRetry) + "\n\n")
	if w.Flush() != nil {
		return
	}
	defer func() { // the last chunk, so that the client sees an end, not a cut
		select {
		case <-gone: // nobody to tell
			return
		default:
		}
		conn.SetWriteDeadline(time.Now().Add(time.Second))
		conn.Write([]byte("0\r\n\r\n"))
	}()
	done := h.drain.done()
	beat := time.NewTicker(h.heartbeat)
	defer beat.Stop()
	var last time.Time // of the last event
	for {
		select {
		case <-done:
			return
		case <-s.Done():
			return
		case <-gone:
			return
		case <-revoked:
			return
		case <-beat.C:
			// Every heartbeat, events or not: the contract promises a
			// comment at least every 15 s. It is also how a client that
			// stopped reading is found: its write fails.
			extend()
			w.WriteString(":\n\n")
			if w.Flush() != nil {
				return
			}
			continue
		case <-s.Ready():
		}
		// At most one event per counter per live.Interval: the slots
		// keep filling meanwhile, and the newest state is sent.
		if wait := live.Interval - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-done:
				t.Stop()
				return
			case <-s.Done():
				t.Stop()
				return
			case <-gone:
				t.Stop()
				return
			case <-revoked:
				t.Stop()
				return
			case <-t.C:
			}
		}
		for _, u := range s.Take() {
			writeEvent(w, u)
		}
		if w.Flush() != nil {
			return
		}
		last = time.Now()
	}
}

// watchPeer reads conn until the client closes it, and then closes the
// channel it returned. A writer hears of a gone client only when a write
// fails (fasthttp #993, #771), and the first write after the client's FIN
// still succeeds (the kernel answers it with a reset): a stream whose
// client had gone held its place under the per-address cap for up to two
// heartbeats (30 s), so a dashboard reloaded a few times was refused 429
// and the open-streams gauge overstated. A client sends nothing after
// its request on an event stream, so a read that returns is its FIN (EOF),
// its reset, or bytes it should not have sent (dropped, read on): the
// read is what net/http's background read does to cancel a request's
// context at once. It costs a goroutine parked in the runtime's poller
// and a small buffer per stream; a poll for POLLRDHUP would need its own
// poller beside the runtime's. The caller stops it with a read deadline
// in the past and waits for the channel.
func watchPeer(conn net.Conn) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		var buf [64]byte
		for {
			if _, err := conn.Read(buf[:]); err != nil {
				return
			}
		}
	}()
	return gone
}

// chunked writes each flush of the stream's buffer as one HTTP/1.1 chunk,
// in one write to the socket.
type chunked struct {
	conn net.Conn
	buf  []byte
}

func (c *chunked) Write(p []byte) (int, error) {
	c.buf = strconv.AppendInt(c.buf[:0], int64(len(p)), 16)
	c.buf = append(c.buf, "\r\n"...)
	c.buf = append(c.buf, p...)
	c.buf = append(c.buf, "\r\n"...)
	if _, err := c.conn.Write(c.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// writeEvent writes one event of openapi.yaml's shapes. It allocates nothing: a
// hot counter's event is written by every stream that watches it. Names
// are valid counter names, without control characters, so the data is one
// line and only quotes and backslashes need escaping in its JSON.
func writeEvent(w *bufio.Writer, u live.Update) {
	var num [32]byte
	w.WriteString("id: ")
	w.Write(strconv.AppendInt(num[:0], u.Version, 10))
	if u.Deleted {
		w.WriteString("\nevent: deleted\ndata: {\"name\":")
		writeJSONName(w, u.Name)
		w.WriteString("}\n\n")
		return
	}
	w.WriteString("\nevent: counter\ndata: {\"name\":")
	writeJSONName(w, u.Name)
	w.WriteString(",\"value\":")
	w.Write(strconv.AppendInt(num[:0], u.Value, 10))
	w.WriteString(",\"at\":\"")
	w.Write(u.At().AppendFormat(num[:0], time.RFC3339Nano))
	w.WriteString("\"}\n\n")
}

func writeJSONName(w *bufio.Writer, name string) {
	w.WriteByte('"')
	for i := 0; i < len(name); i++ {
		if c := name[i]; c == '"' || c == '\\' {
			w.WriteByte('\\')
		}
		w.WriteByte(name[i])
	}
	w.WriteByte('"')
}
