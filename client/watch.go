package client

import (
	"bufio"
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Event is a change of a watched counter (docs/live-updates.md, "What a stream sends").
type Event struct {
	Type  string // "counter" (a new value) or "deleted"
	ID    string // orders the changes of the stream; sent back as Last-Event-ID on reconnect
	Name  string
	Value int64     // for "counter"
	At    time.Time // the change's commit time, for "counter"
	// Data is the event's JSON as the service sent it.
	Data json.RawMessage
}

// watchIdle is how long a stream may stay silent before it is taken for
// dead and reconnected: the service sends a comment at least every 15
// seconds, so three missed ones mean the connection is gone.
const watchIdle = 45 * time.Second

// Watch yields the values of the counter name as they change: the current
// value at once, then each new one (a stream may skip intermediate values,
// never go back). When the connection drops it reconnects after the pause
// the service asked for, sending the last event's id, so that nothing is
// sent again unless the counter changed meanwhile. It runs until the loop
// breaks or ctx ends (then it yields ctx's error), or an answered error
// (NotFound before the counter exists) or a reconnection that failed
// after the retries ends it. An HTTPClient with a Timeout cuts streams at
// that timeout; watch with a client without one.
func (c *Client) Watch(ctx context.Context, name string) iter.Seq2[Event, error] {
	return c.watch(ctx, "/counters/"+esc(name)+"/events", nil)
}

// WatchPrefix yields the changes of every counter whose name starts with
// prefix (not empty), from now on.
func (c *Client) WatchPrefix(ctx context.Context, prefix string) iter.Seq2[Event, error] {
	return c.watch(ctx, "/events", url.Values{"prefix": {prefix}})
}

// WatchHits yields the hit count of a page under the service's public
// prefixes, then each new value, as Watch does; it needs no key, counts no
// hit, and a page that has none yet starts at 0: what a page shows live
// (the snippet's data-live).
func (c *Client) WatchHits(ctx context.Context, name string) iter.Seq2[Event, error] {
	return c.watch(ctx, "/hits/"+esc(name)+"/events", nil)
}

func (c *Client) watch(ctx context.Context, path string, q url.Values) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		s := &sseStream{retry: c.backoff}
		for {
			err := c.watchOnce(ctx, path, q, s, yield)
			if s.stopped {
				return
			}
			if err == nil {
				err = ctx.Err()
			}
			if err != nil {
				yield(Event{}, err)
				return
			}
			t := time.NewTimer(s.retry)
			select {
			case <-ctx.Done():
				t.Stop()
				yield(Event{}, ctx.Err())
				return
			case <-t.C:
			}
		}
	}
}

// watchOnce reads one connection's events until it ends. It returns an
// error only when no connection could be made; a stream that ends or
// breaks returns nil, to be reconnected.
func (c *Client) watchOnce(ctx context.Context, path string, q url.Values, s *sseStream, yield func(Event, error) bool) error {
	conn, cancel := context.WithCancel(ctx)
	defer cancel()
	h := http.Header{"Accept": {"text/event-stream"}}
	if s.lastID != "" {
		h.Set("Last-Event-ID", s.lastID)
	}
	res, err := c.send(conn, request{method: http.MethodGet, path: path, query: q, header: h})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	idle := time.AfterFunc(watchIdle, cancel)
	defer idle.Stop()
	r := bufio.NewReader(res.Body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil // the stream ended or broke: reconnect
		}
		idle.Reset(watchIdle)
		ev, ok := s.line(strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r"))
		if !ok {
			continue
		}
		if !yield(ev, nil) {
			s.stopped = true
			return nil
		}
	}
}

// sseStream is the parser state of a Server-Sent Events stream (the
// WHATWG event-stream format), kept across reconnections for its last id
// and retry.
type sseStream struct {
	event, data string
	hasData     bool
	idBuf       string // the id of the event being read
	lastID      string // of the last whole event
	retry       time.Duration
	stopped     bool // the consumer broke out of the loop
}

// line takes one line of the stream; it returns an event when the line
// ends one.
func (s *sseStream) line(l string) (Event, bool) {
	if l == "" {
		// An event counts as seen only once it is whole: the id of one cut
		// by a broken connection must not be sent back, or its value would
		// be taken for delivered.
		s.lastID = s.idBuf
		defer func() { s.event, s.data, s.hasData = "", "", false }()
		if !s.hasData {
			return Event{}, false
		}
		return s.dispatch()
	}
	if strings.HasPrefix(l, ":") {
		return Event{}, false // a comment: the keep-alive
	}
	field, value, _ := strings.Cut(l, ":")
	value = strings.TrimPrefix(value, " ")
	switch field {
	case "event":
		s.event = value
	case "data":
		if s.hasData {
			s.data += "\n"
		}
		s.data += value
		s.hasData = true
	case "id":
		if !strings.ContainsRune(value, 0) {
			s.idBuf = value
		}
	case "retry":
		if ms, err := strconv.Atoi(value); err == nil && ms >= 0 {
			s.retry = time.Duration(ms) * time.Millisecond
		}
	}
	return Event{}, false
}

func (s *sseStream) dispatch() (Event, bool) {
	ev := Event{Type: s.event, ID: s.lastID, Data: json.RawMessage(s.data)}
	if ev.Type == "" {
		ev.Type = "message"
	}
	var d struct {
		Name  string    `json:"name"`
		Value int64     `json:"value"`
		At    time.Time `json:"at"`
	}
	if err := json.Unmarshal([]byte(s.data), &d); err != nil {
		return Event{}, false // not an event of the contract: nothing to report
	}
	ev.Name, ev.Value, ev.At = d.Name, d.Value, d.At
	return ev, true
}
