package cache_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/testenv"
)

func TestMain(m *testing.M) {
	cache.LogRedisTo(slog.New(slog.DiscardHandler)) // dial failures are expected here
	os.Exit(m.Run())
}

func TestRedisDownFallsBackToMySQLAndRecovers(t *testing.T) {
	t.Parallel()
	st := newStack(t, cache.Options{Cooldown: 200 * time.Millisecond, Timeout: cache.DefaultTimeout})
	ctx := context.Background()
	st.increment(t, "down", 1)
	st.get(t, "down")
	st.redis.Kill()

	// Every operation still works, from MySQL.
	st.increment(t, "down", 1)
	if got := st.get(t, "down").Value; got != 2 {
		t.Fatalf("Get with Redis down = %d, want 2", got)
	}
	if _, _, err := st.svc.Set(ctx, counters.SetRequest{Name: "down", Value: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.svc.Reset(ctx, counters.ResetRequest{Prefix: "do", Value: 5}); err != nil {
		t.Fatal(err)
	}
	page, err := st.svc.List(ctx, counters.ListFilter{Prefix: "down"})
	if err != nil || len(page.Counters) != 1 || page.Counters[0].Value != 5 {
		t.Fatalf("List with Redis down = %+v, %v", page, err)
	}
	if err := st.cache.Check(ctx); err == nil {
		t.Fatal("Check reports Redis up while it is down")
	}
	if st.metric(t, "counters_cache_fallbacks_total") == 0 {
		t.Fatal("no fallbacks counted")
	}

	st.redis.Start(t) // empty
	if got := st.get(t, "down").Value; got != 5 {
		t.Fatalf("Get after Redis came back = %d, want 5", got)
	}
	hits := st.metric(t, "counters_cache_hits_total", "view=counter")
	testenv.WaitUntil(t, "reads served from Redis again", func() bool {
		st.get(t, "down")
		return st.metric(t, "counters_cache_hits_total", "view=counter") > hits
	})
}

// A Redis that takes writes but never answers them, or answers nothing at
// all, must cost each request about one Redis timeout, never seconds: a
// write whose invalidation is not confirmed costs its lease on top. A round
// may cost three timeouts and two leases (about 0.8 s); a loaded machine
// gets a second more. A call without a deadline would wait go-redis's own
// read timeout, 3 s.
func TestHungRedisCostsEachRequestLessThanASecond(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		hang, unhang func(*testing.T, *stack)
	}{
		{"writes paused",
			func(t *testing.T, st *stack) { st.pauseWrites(t, 30*time.Second) },
			func(t *testing.T, st *stack) { st.unpause(t) }},
		{"process stopped",
			func(t *testing.T, st *stack) { st.redis.Freeze() },
			func(t *testing.T, st *stack) { st.redis.Thaw() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStack(t, cache.Options{Lease: 250 * time.Millisecond, Timeout: cache.DefaultTimeout})
			ctx := context.Background()
			for i := range 4 {
				st.increment(t, fmt.Sprint("hung/", i), 1)
				st.get(t, fmt.Sprint("hung/", i))
			}
			tt.hang(t, st)
			want := map[string]int64{}
			var slowest time.Duration
			for round := range 10 {
				name := fmt.Sprint("hung/", round%4)
				start := time.Now()
				want[name] = st.increment(t, name, 1)
				if got := st.get(t, name).Value; got != want[name] {
					t.Fatalf("Get(%s) = %d right after the increment answered %d", name, got, want[name])
				}
				if _, err := st.svc.List(ctx, counters.ListFilter{Prefix: "hung/"}); err != nil {
					t.Fatal(err)
				}
				d := time.Since(start)
				if d > 2*time.Second {
					t.Fatalf("round %d (increment, get, list) took %v, want at most 2 s", round, d)
				}
				slowest = max(slowest, d)
			}
			t.Logf("slowest round (increment, get, list): %v", slowest)
			tt.unhang(t, st)
			for name, v := range want {
				if got := st.get(t, name).Value; got != v {
					t.Fatalf("Get(%s) after recovery = %d, want %d", name, got, v)
				}
			}
		})
	}
}
