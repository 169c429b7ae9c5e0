package cache_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/live"
)

// events is what a live.Listener heard.
type events struct {
	missed, watching chan struct{}
	changed          chan []string
}

func listen(t *testing.T, tr live.Transport) *events {
	t.Helper()
	ev := &events{missed: make(chan struct{}, 10), watching: make(chan struct{}, 10), changed: make(chan []string, 10)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tr.Subscribe(ctx, live.Listener{
			Changed:  func(names []string) { ev.changed <- names },
			Missed:   func() { ev.missed <- struct{}{} },
			Watching: func() { ev.watching <- struct{}{} },
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ev
}

func within(t *testing.T, c <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(d):
		t.Fatalf("no %s within %v", what, d)
	}
}

// Two processes' transports on one Redis: a subscription says it may have
// missed notices as it starts; a publish reaches the other process; a
// share is announced and read back by anyone, until it expires.
func TestLiveTransportCarriesNoticesAndWatches(t *testing.T) {
	t.Parallel()
	a := newStack(t, cache.Options{})
	ta := a.cache.Live()
	rb, err := cache.NewClient(a.redis.URL(), cache.DefaultTimeout) // the other process's own client
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rb.Close() })
	tb := cache.New(counters.Backend{Store: a.mysql}, rb, cache.Options{}).Live()

	heard := listen(t, ta)
	within(t, heard.missed, 5*time.Second, "Missed on the first subscription")
	ctx := context.Background()
	if err := tb.Publish(ctx, []string{"a", "b/c"}); err != nil {
		t.Fatal(err)
	}
	select {
	case names := <-heard.changed:
		if !slices.Equal(names, []string{"a", "b/c"}) {
			t.Errorf("heard %q", names)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the publish was not heard")
	}

	if err := tb.Share(ctx, live.Watch{Names: []string{"a"}, Prefixes: []string{"shop/"}}, 500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	within(t, heard.watching, 5*time.Second, "Watching after a share")
	w, err := ta.Watched(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(w.Names, []string{"a"}) || !slices.Equal(w.Prefixes, []string{"shop/"}) {
		t.Errorf("watched %+v", w)
	}
	time.Sleep(time.Second)
	if w, _ := ta.Watched(ctx); len(w.Names)+len(w.Prefixes) > 0 {
		t.Errorf("watched %+v after its ttl", w)
	}
}

// A subscription that Redis stops answering (paused) is made again once
// Redis is back, and says so: the process then checks what it watches.
func TestLiveSubscriptionIsMadeAgainAfterRedisWasPaused(t *testing.T) {
	t.Parallel()
	st := newStack(t, cache.Options{Timeout: cache.DefaultTimeout})
	heard := listen(t, st.cache.Live())
	within(t, heard.missed, 5*time.Second, "Missed on the first subscription")
	st.redis.Freeze()
	time.Sleep(4 * time.Second) // past the probe's silence
	st.redis.Thaw()
	within(t, heard.missed, 10*time.Second, "Missed after the pause")
}
