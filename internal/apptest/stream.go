package apptest

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Event is one event of a live-update stream as a client parses it.
type Event struct {
	ID, Event string
	Name      string `json:"name"`
	Value     int64  `json:"value"`
	At        string `json:"at"`
}

// Stream is a client's open live-update stream over a real connection.
type Stream struct {
	Header http.Header
	Lines  chan string   // every line, comments and retry: included
	Done   chan struct{} // closed when the stream ended
	events chan Event
	body   interface{ Close() error }
	cancel context.CancelFunc
}

// OpenStream opens url and fails unless it is a 200 event stream; the
// stream is closed when the test ends.
func OpenStream(tb testing.TB, url string, headers ...string) *Stream {
	tb.Helper()
	s, status, body := TryStream(tb, url, headers...)
	if status != 200 {
		tb.Fatalf("GET %s: %d %s", url, status, body)
	}
	return s
}

// TryStream opens url; on an answer other than 200 it returns the status
// and body instead of a stream. headers are "Key: value" pairs.
func TryStream(tb testing.TB, url string, headers ...string) (*Stream, int, string) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	if res.StatusCode != 200 {
		var b strings.Builder
		bufio.NewReader(res.Body).WriteTo(&b)
		res.Body.Close()
		cancel()
		return nil, res.StatusCode, b.String()
	}
	if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		tb.Errorf("Content-Type %q", ct)
	}
	s := &Stream{Header: res.Header, Lines: make(chan string, 100000), Done: make(chan struct{}),
		events: make(chan Event, 100000), body: res.Body, cancel: cancel}
	go s.read(bufio.NewScanner(res.Body))
	tb.Cleanup(s.Close)
	return s, 200, ""
}

func (s *Stream) read(sc *bufio.Scanner) {
	defer close(s.Done)
	var ev Event
	for sc.Scan() {
		line := sc.Text()
		s.Lines <- line
		switch {
		case line == "":
			if ev.Event != "" {
				s.events <- ev
			}
			ev = Event{}
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.Event = line[7:]
		case strings.HasPrefix(line, "data: "):
			json.Unmarshal([]byte(line[6:]), &ev)
		}
	}
}

// Close leaves the stream, as a client that goes away.
func (s *Stream) Close() {
	s.cancel()
	s.body.Close()
	<-s.Done
}

// Next is the next event; it fails after wait, or when the stream ends.
func (s *Stream) Next(tb testing.TB, wait time.Duration) Event {
	tb.Helper()
	select {
	case ev := <-s.events:
		return ev
	case <-time.After(wait):
		tb.Fatalf("no event within %v", wait)
	case <-s.Done:
		select {
		case ev := <-s.events:
			return ev
		default:
		}
		tb.Fatal("the stream ended")
	}
	return Event{}
}

// Quiet fails if an event comes within d.
func (s *Stream) Quiet(tb testing.TB, d time.Duration) {
	tb.Helper()
	select {
	case ev := <-s.events:
		tb.Fatalf("unexpected event %+v", ev)
	case <-time.After(d):
	}
}

// Until reads events until one has value want, failing after wait; it
// returns the values seen on the way, want included.
func (s *Stream) Until(tb testing.TB, want int64, wait time.Duration) []int64 {
	tb.Helper()
	deadline := time.After(wait)
	var seen []int64
	for {
		select {
		case ev := <-s.events:
			seen = append(seen, ev.Value)
			if ev.Value == want {
				return seen
			}
		case <-deadline:
			tb.Fatalf("value %d not seen within %v (saw %v)", want, wait, seen)
		}
	}
}
