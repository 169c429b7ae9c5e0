package clienttest

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/client"
	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
)

// cutProxy forwards to the service and cuts every connection through it
// on demand, as a load balancer that restarts; it records the
// Last-Event-ID of each request.
type cutProxy struct {
	*httptest.Server
	mu      sync.Mutex
	lastIDs []string
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	// The reverse proxy flushes text/event-stream answers as they come.
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) }}
	p := &cutProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.lastIDs = append(p.lastIDs, r.Header.Get("Last-Event-ID"))
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *cutProxy) ids() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lastIDs...)
}

// waitRequests waits until n requests have reached the proxy.
func (p *cutProxy) waitRequests(t *testing.T, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(p.ids()) < n; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d requests reached the proxy, want %d: the watch did not reconnect", len(p.ids()), n)
		}
	}
}

// watching runs a watch in the background; its events come on the
// channel. An error other than the end of the test fails the test.
func watching(t *testing.T, watch func(ctx context.Context) iter.Seq2[client.Event, error]) <-chan client.Event {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	events := make(chan client.Event, 10000)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range watch(ctx) {
			if err != nil {
				if ctx.Err() == nil {
					t.Errorf("the watch ended with %v", err)
				}
				return
			}
			events <- ev
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return events
}

func nextEvent(t *testing.T, events <-chan client.Event) client.Event {
	t.Helper()
	select {
	case ev := <-events:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	return client.Event{}
}

// untilValue reads events until one carries want and returns every value
// seen on the way, want included.
func untilValue(t *testing.T, events <-chan client.Event, want int64) []int64 {
	t.Helper()
	var seen []int64
	for {
		ev := nextEvent(t, events)
		seen = append(seen, ev.Value)
		if ev.Value == want {
			return seen
		}
		if ev.Value > want {
			t.Fatalf("value %d came before %d (saw %v)", ev.Value, want, seen)
		}
	}
}

func nonDecreasing(vs []int64) bool {
	for i := 1; i < len(vs); i++ {
		if vs[i] < vs[i-1] {
			return false
		}
	}
	return true
}

// Watch and WatchPrefix against the real service, with Redis as
// production fans the changes out.
func TestWatchAgainstTheService(t *testing.T) {
	t.Parallel()
	env := apptest.NewWithCache(t, testenv.StartRedis(t).URL())
	// Each subtest has a client and a deadline of its own: one deadline
	// for them all let a slow first subtest on a loaded machine use up the
	// others' time ("context deadline exceeded" before their first call).
	directClient := func(t *testing.T) (*client.Client, context.Context) {
		return newClient(t, env.URL, client.Options{})
	}

	t.Run("the current value, then new values in order under concurrent increments", func(t *testing.T) {
		direct, ctx := directClient(t)
		const name, writers, each = "watch/concurrent", 8, 25
		if _, _, err := direct.Set(ctx, name, 0, client.SetOptions{}); err != nil {
			t.Fatal(err)
		}
		events := watching(t, func(ctx context.Context) iter.Seq2[client.Event, error] { return direct.Watch(ctx, name) })
		first := nextEvent(t, events)
		if first.Type != "counter" || first.Name != name || first.Value != 0 || first.ID == "" || first.At.IsZero() {
			t.Fatalf("first event %+v, want the current value 0 with an id and a time", first)
		}
		var wg sync.WaitGroup
		for range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					if _, err := direct.Increment(ctx, name, 1); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		seen := untilValue(t, events, writers*each)
		if !nonDecreasing(seen) {
			t.Errorf("values went back: %v", seen)
		}
	})

	t.Run("a page's hits: 0 before the first, then each hit, and watching counts none", func(t *testing.T) {
		direct, ctx := directClient(t)
		const name = "hits/watched-page"
		events := watching(t, func(ctx context.Context) iter.Seq2[client.Event, error] { return direct.WatchHits(ctx, name) })
		if first := nextEvent(t, events); first.Name != name || first.Value != 0 {
			t.Fatalf("first event %+v, want %s at 0", first, name)
		}
		if _, err := direct.Hit(ctx, name); err != nil {
			t.Fatal(err)
		}
		untilValue(t, events, 1)
		if v, err := direct.Get(ctx, name); err != nil || v.Value != 1 {
			t.Fatalf("Get = %+v, %v; want 1: watching must count no hit", v, err)
		}
	})

	t.Run("a cut connection resumes with Last-Event-ID and loses no final value", func(t *testing.T) {
		direct, ctx := directClient(t)
		const name = "watch/resumed"
		if _, _, err := direct.Set(ctx, name, 1, client.SetOptions{}); err != nil {
			t.Fatal(err)
		}
		proxy := newCutProxy(t, env.URL)
		through, _ := newClient(t, proxy.URL, client.Options{})
		events := watching(t, func(ctx context.Context) iter.Seq2[client.Event, error] { return through.Watch(ctx, name) })
		first := nextEvent(t, events)
		if first.Value != 1 {
			t.Fatalf("first value %d, want 1", first.Value)
		}

		// Changes while the watcher is away: the last one must come.
		before := len(proxy.ids())
		proxy.CloseClientConnections()
		for range 5 {
			if _, err := direct.Increment(ctx, name, 1); err != nil {
				t.Fatal(err)
			}
		}
		seen := untilValue(t, events, 6)
		if seen[0] <= 1 || !nonDecreasing(seen) {
			t.Errorf("after the reconnection the values were %v: want new values only, in order, up to 6", seen)
		}
		// The requests before the cut carry no Last-Event-ID (more than one
		// when the service answered the first with a 503 on a starved
		// machine, which the client rightly retries), the first after it
		// the first event's: the only one seen before the cut. A
		// reconnection that failed is retried too, so more requests may
		// come; each carries an id, never none.
		ids := proxy.ids()
		if len(ids) <= before || ids[before] != first.ID {
			t.Errorf("Last-Event-IDs %q, cut after %d: want the first event's %q first after the cut", ids, before, first.ID)
		}
		for i, id := range ids {
			if (i < before) != (id == "") {
				t.Errorf("request %d of %q carried Last-Event-ID %q; cut after %d: want none before the cut, and one after it", i+1, ids, id, before)
			}
		}

		// Nothing changed while it was away: nothing is sent again, so the
		// next event is the next change.
		last := proxy.ids()
		proxy.CloseClientConnections()
		proxy.waitRequests(t, len(last)+1)
		if _, err := direct.Increment(ctx, name, 1); err != nil {
			t.Fatal(err)
		}
		if ev := nextEvent(t, events); ev.Value != 7 {
			t.Errorf("after a reconnection with nothing changed the next value was %d, want 7 (the next change)", ev.Value)
		}
	})

	t.Run("a prefix sends the changes of its counters only", func(t *testing.T) {
		direct, ctx := directClient(t)
		events := watching(t, func(ctx context.Context) iter.Seq2[client.Event, error] {
			return direct.WatchPrefix(ctx, "watched/")
		})
		// A prefix stream sends changes only: change a counter until the
		// stream shows it is open.
		deadline := time.Now().Add(15 * time.Second)
		for open := false; !open; {
			if time.Now().After(deadline) {
				t.Fatal("the prefix stream sent no change of watched/a within 15 s")
			}
			if _, err := direct.Increment(ctx, "watched/a", 1); err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-events:
				open = ev.Name == "watched/a"
			case <-time.After(200 * time.Millisecond):
			}
		}
		if _, err := direct.Increment(ctx, "unwatched/x", 1); err != nil {
			t.Fatal(err)
		}
		if _, _, err := direct.Set(ctx, "watched/b", 5, client.SetOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := direct.Delete(ctx, "watched/a"); err != nil {
			t.Fatal(err)
		}
		// Order holds within a counter, not across counters.
		for sawB, sawDeleted := false, false; !sawB || !sawDeleted; {
			ev := nextEvent(t, events)
			if !strings.HasPrefix(ev.Name, "watched/") {
				t.Errorf("event %+v of a counter outside the prefix", ev)
			}
			sawB = sawB || (ev.Name == "watched/b" && ev.Type == "counter" && ev.Value == 5)
			sawDeleted = sawDeleted || (ev.Name == "watched/a" && ev.Type == "deleted")
		}
	})

	t.Run("a counter that does not exist ends the watch with NotFound", func(t *testing.T) {
		direct, ctx := directClient(t)
		var errs []error
		for _, err := range direct.Watch(ctx, "watch/missing") {
			errs = append(errs, err)
		}
		if len(errs) != 1 || !errors.Is(errs[0], client.NotFound) {
			t.Errorf("errors %v, want NotFound once", errs)
		}
	})
}
