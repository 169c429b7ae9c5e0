package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/client"
)

// sseServer speaks the live-update streams of docs/live-updates.md for one
// counter: each connection gets the next script of lines, and the
// Last-Event-ID it brought is recorded. It makes what the real service cannot be made to
// do on cue, such as an event cut in the middle by the connection's end;
// watch_service_test.go holds Watch to the real service.
type sseServer struct {
	URL string

	mu      sync.Mutex
	lastIDs []string
	paths   []string
}

func newSSEServer(t *testing.T, scripts ...string) *sseServer {
	s := &sseServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		n := len(s.lastIDs)
		s.lastIDs = append(s.lastIDs, r.Header.Get("Last-Event-ID"))
		s.paths = append(s.paths, r.URL.RequestURI()+" "+r.Header.Get("Accept"))
		s.mu.Unlock()
		if n >= len(scripts) {
			<-r.Context().Done() // nothing more: hold the stream open
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, chunk := range strings.SplitAfter(scripts[n], "\n\n") {
			fmt.Fprint(w, chunk)
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *sseServer) ids() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.lastIDs...)
}

// Watch yields each event of the stream, reconnects when the stream ends
// with the last event's id, and goes on where it left off.
func TestWatchResumesWithTheLastEventID(t *testing.T) {
	s := newSSEServer(t,
		"retry: 10\n\n: keep-alive\n\n"+
			"event: counter\nid: 5\ndata: {\"name\":\"a b\",\"value\":1,\"at\":\"2026-11-24T10:00:00Z\"}\n\n"+
			"event: counter\nid: 6\ndata: {\"name\":\"a b\",\n"+ // an event cut by the connection's end is dropped
			"",
		"retry: 10\n\n"+
			"event: deleted\nid: 7\ndata: {\"name\":\"a b\"}\n\n"+
			"event: counter\nid: 9\ndata: {\"name\":\"a b\",\"value\":0,\"at\":\"2026-11-24T10:00:02Z\"}\n\n",
	)
	c, ctx := newClient(t, s.URL, fast)
	var got []string
	for ev, err := range c.Watch(ctx, "a b") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %d %s", ev.ID, ev.Type, ev.Value, ev.At.Format(time.TimeOnly)))
		if len(got) == 3 {
			break
		}
	}
	if want := []string{"5 counter 1 10:00:00", "7 deleted 0 00:00:00", "9 counter 0 10:00:02"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events %q, want %q", got, want)
	}
	if ids := s.ids(); len(ids) != 2 || ids[0] != "" || ids[1] != "5" {
		t.Errorf("Last-Event-IDs sent %q, want none, then 5: the last whole event's, not the cut one's", ids)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.paths[0]; p != "/v1/counters/a%20b/events text/event-stream" {
		t.Errorf("asked %s", p)
	}
}

// A counter that does not exist ends the watch with NotFound; an ended
// context ends it with the context's error.
func TestWatchEndsOnARefusalOrTheContext(t *testing.T) {
	s := newScripted(t, apiError(404, "not_found"))
	c, ctx := newClient(t, s.URL, fast)
	for _, err := range c.Watch(ctx, "missing") {
		if !errors.Is(err, client.NotFound) {
			t.Errorf("error %v, want not_found", err)
		}
	}

	sse := newSSEServer(t, "retry: 10\n\nevent: counter\nid: 1\ndata: {\"name\":\"a\",\"value\":1,\"at\":\"2026-11-24T10:00:00Z\"}\n\n")
	c, _ = newClient(t, sse.URL, fast)
	short, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errs []error
	for _, err := range c.Watch(short, "a") {
		if err == nil {
			cancel() // the first value came: stop watching
			continue
		}
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.Canceled) {
		t.Errorf("errors %v, want context.Canceled once", errs)
	}
}
