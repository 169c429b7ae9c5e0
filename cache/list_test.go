package cache_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/testenv"
)

// By default a listing shows every write answered before it began, as a
// read of one counter does: while writers increment, no listing shows
// less than a value already acknowledged, and none is served from Redis.
func TestListsShowEveryAnsweredWriteByDefault(t *testing.T) {
	t.Parallel()
	st := newStack(t, cache.Options{})
	ctx := context.Background()
	st.increment(t, "fresh/a", 1)
	var mu sync.Mutex
	var acked int64
	var wg sync.WaitGroup
	end := time.Now().Add(time.Second)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				v, err := st.svc.Increment(ctx, "fresh/a", 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = max(acked, v)
				mu.Unlock()
			}
		}()
	}
	lists := 0
	for ; time.Now().Before(end); lists++ {
		mu.Lock()
		floor := acked
		mu.Unlock()
		page, err := st.svc.List(ctx, counters.ListFilter{Prefix: "fresh/", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if got := page.Counters[0].Value; got < floor {
			t.Fatalf("listing %d shows %d, but %d was acknowledged before it began", lists, got, floor)
		}
	}
	wg.Wait()
	if lists < 10 {
		t.Fatalf("only %d listings ran", lists)
	}
	if n := st.metric(t, "counters_cache_hits_total", "view=list"); n != 0 {
		t.Fatalf("%v listings were served from Redis", n)
	}
}

// With a ListTTL, while a writer increments, every listing must show at
// least the value acknowledged ListTTL before the listing began, and listings must be served
// from Redis at all.
func TestListsLagWritesByAtMostListTTL(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	st := newStack(t, cache.Options{ListTTL: ttl})
	ctx := context.Background()
	st.increment(t, "lag/a", 1)

	type ack struct {
		at    time.Time
		value int64
	}
	var mu sync.Mutex
	var acks []ack
	done := make(chan struct{})
	go func() {
		defer close(done)
		for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
			v, err := st.svc.Increment(ctx, "lag/a", 1)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			acks = append(acks, ack{time.Now(), v})
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	// floor is the highest value acknowledged before t.
	floor := func(t time.Time) int64 {
		mu.Lock()
		defer mu.Unlock()
		var v int64
		for _, a := range acks {
			if a.at.Before(t) {
				v = max(v, a.value)
			}
		}
		return v
	}
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		start := time.Now()
		page, err := st.svc.List(ctx, counters.ListFilter{Prefix: "lag/"})
		if err != nil {
			t.Fatal(err)
		}
		if got, min := page.Counters[0].Value, floor(start.Add(-ttl)); got < min {
			t.Fatalf("listing begun at %v shows %d, but %d was acknowledged more than %v before", start.Format("15:04:05.000"), got, min, ttl)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st.metric(t, "counters_cache_hits_total", "view=list") == 0 {
		t.Fatal("no listing was served from Redis")
	}
}

// A page whose SET Redis runs late, after a freeze, must expire when it
// would have, not ListTTL after Redis ran the SET.
func TestListPageStoredLateExpiresOnTime(t *testing.T) {
	t.Parallel()
	const ttl = 300 * time.Millisecond
	st := newStack(t, cache.Options{ListTTL: ttl, Cooldown: 50 * time.Millisecond, Timeout: cache.DefaultTimeout})
	ctx := context.Background()
	st.increment(t, "late/a", 1)

	held, release := st.mysql.holdNextList()
	listed := make(chan error, 1)
	go func() {
		_, err := st.svc.List(ctx, counters.ListFilter{Prefix: "late/"})
		listed <- err
	}()
	<-held // the listing read 1 from MySQL
	before := commandCalls(t, st, "set")
	st.redis.Freeze()
	release()
	if err := <-listed; err != nil {
		t.Fatal(err)
	}
	st.increment(t, "late/a", 1)
	time.Sleep(ttl)
	st.redis.Thaw()
	testenv.WaitUntil(t, "the late SET ran", func() bool { return commandCalls(t, st, "set") > before })
	if keys, err := st.raw.Keys(ctx, "counters:v1:l:*").Result(); err != nil || len(keys) != 0 {
		t.Fatalf("the late SET left %v (%v), want nothing: its expiry had passed", keys, err)
	}
	testenv.WaitUntil(t, "circuit closed", func() bool { return st.metric(t, "counters_cache_circuit_open") == 0 })
	page, err := st.svc.List(ctx, counters.ListFilter{Prefix: "late/"})
	if err != nil {
		t.Fatal(err)
	}
	if got := page.Counters[0].Value; got != 2 {
		t.Fatalf("listing after the late SET shows %d, want 2", got)
	}
}
