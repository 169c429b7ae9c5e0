package cache_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/testenv"
)

// A reader reads MySQL, a writer commits and invalidates, then the reader's
// fill arrives: it must be refused, or the old value would stay cached.
func TestLateFillIsRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name    string
		prepare func(*testing.T, *stack) // puts 1 into MySQL
		between func(*testing.T, *stack) // after the write, before the fill
		many    bool                     // the write is one of many counters
	}{
		{"after a write",
			func(t *testing.T, st *stack) { st.increment(t, "late", 1) },
			func(*testing.T, *stack) {}, false},
		// Writes of many counters delete the entries instead of giving
		// them a new generation.
		{"after a write of many counters",
			func(t *testing.T, st *stack) { st.increment(t, "late", 1) },
			func(*testing.T, *stack) {}, true},
		// The reader found no entry and reserved a generation; then the
		// write's invalidation ran and Redis restarted empty. The key is
		// missing again, as it was when the reader looked.
		{"after Redis restarted empty",
			func(t *testing.T, st *stack) {
				if _, err := st.mysql.Increment(ctx, "late", 1); err != nil { // no entry
					t.Fatal(err)
				}
			},
			func(t *testing.T, st *stack) {
				st.redis.Kill()
				st.redis.Start(t)
				// The cache's connections died with the server: let it dial
				// new ones, so that the fill reaches Redis.
				for ok := 0; ok < 5; {
					if st.cache.Check(ctx) == nil {
						ok++
					} else {
						ok = 0
					}
				}
			}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStack(t, cache.Options{Timeout: cache.DefaultTimeout}) // one case kills Redis
			tt.prepare(t, st)
			held, release := st.mysql.holdNextGet()
			r := readAsync(st.svc, "late")
			<-held // the reader has read 1 from MySQL
			if tt.many {
				if _, err := st.cache.Backend().Store.IncrementMany(ctx, []counters.Increment{{Name: "late", By: 1}, {Name: "other", By: 1}}); err != nil {
					t.Fatal(err)
				}
			} else {
				st.increment(t, "late", 1)
			}
			tt.between(t, st)
			release()
			if got := (<-r).value(t); got != 1 {
				t.Fatalf("slow reader got %d, want the 1 it read before the write", got)
			}
			if got := st.metric(t, "counters_cache_errors_total", "op=fill"); got != 0 {
				t.Fatalf("the fill failed (%v errors) instead of reaching Redis", got)
			}
			for range 2 {
				if got := st.get(t, "late").Value; got != 2 {
					t.Fatalf("Get after the write = %d, want 2", got)
				}
			}
			if got := st.metric(t, "counters_cache_fill_conflicts_total"); got != 1 {
				t.Fatalf("fill conflicts = %v, want 1", got)
			}
		})
	}
}

// While Redis holds writes it still answers reads, so an entry whose
// invalidation timed out could still be served, to this process or any
// other. Such a write is answered only once the entry's lease has run out;
// then every read shows it. An entry expires a lease after its MySQL read
// began, and a write whose invalidation Redis confirmed is answered at once.
func TestAWriteWhoseInvalidationTimedOutIsAnsweredAfterTheLease(t *testing.T) {
	t.Parallel()
	const lease = 500 * time.Millisecond
	st := newStack(t, cache.Options{Lease: lease, Timeout: cache.DefaultTimeout})
	ctx := context.Background()
	st.increment(t, "paused", 1)
	st.get(t, "paused") // cached
	if ttl := st.raw.PTTL(ctx, "counters:v1:c:paused").Val(); ttl <= 0 || ttl > lease {
		t.Fatalf("the entry lives %v, want at most the lease %v", ttl, lease)
	}
	if got := st.metric(t, "counters_cache_lease_waits_total"); got != 0 {
		t.Fatalf("lease waits = %v before any fault", got)
	}

	st.pauseWrites(t, 10*time.Second)
	start := time.Now()
	st.increment(t, "paused", 1)
	if d := time.Since(start); d < lease {
		t.Fatalf("the write was answered after %v, before its lease of %v ran out", d, lease)
	}
	if got := st.metric(t, "counters_cache_lease_waits_total"); got != 1 {
		t.Fatalf("lease waits = %v, want 1", got)
	}
	if got := st.get(t, "paused").Value; got != 2 {
		t.Fatalf("Get during the pause = %d, want 2 (the cache held 1)", got)
	}

	st.unpause(t)
	hits := st.metric(t, "counters_cache_hits_total")
	testenv.WaitUntil(t, "reads served from Redis again", func() bool {
		if got := st.get(t, "paused").Value; got != 2 {
			t.Fatalf("Get after the pause = %d, want 2", got)
		}
		return st.metric(t, "counters_cache_hits_total") > hits
	})
}

// Under SIGSTOP the commands that timed out stay in the socket buffers and
// run when Redis resumes, after their callers moved on. None of them may
// leave an old value behind.
func TestCommandsThatRunAfterAFreezeLeaveNoOldValue(t *testing.T) {
	t.Parallel()
	st := newStack(t, cache.Options{Cooldown: 1500 * time.Millisecond, Lease: 250 * time.Millisecond, Timeout: cache.DefaultTimeout})
	st.increment(t, "frozen", 1)
	st.get(t, "frozen") // loads the scripts, so that late EVALSHAs can run
	st.increment(t, "frozen", 1)

	held, release := st.mysql.holdNextGet()
	r := readAsync(st.svc, "frozen")
	<-held
	before := commandCalls(t, st, "evalsha")
	st.redis.Freeze()
	release()
	if got := (<-r).value(t); got != 2 {
		t.Fatalf("reader got %d, want 2", got)
	}
	start := time.Now()
	st.increment(t, "frozen", 1)
	if got := st.get(t, "frozen").Value; got != 3 {
		t.Fatalf("Get during the freeze = %d, want 3", got)
	}
	// Two timeouts and two leases, a second more for a loaded machine; a
	// call without a deadline would wait go-redis's 3 s.
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("increment and get took %v while Redis was frozen, want at most 2 s", d)
	}
	// Once the circuit is open nothing new is sent, so a script that runs
	// right after the thaw was sent before: at least the fill, which went
	// out on an open connection. (Commands that needed a new connection
	// never left: the connection's handshake timed out.)
	testenv.WaitUntil(t, "circuit open", func() bool { return st.metric(t, "counters_cache_circuit_open") == 1 })
	st.redis.Thaw()
	testenv.WaitUntil(t, "late commands ran", func() bool { return commandCalls(t, st, "evalsha") >= before+1 })
	if st.metric(t, "counters_cache_circuit_open") != 1 {
		t.Fatal("the circuit closed before the late commands were seen; cannot tell them from new ones")
	}
	for range 2 {
		if got := st.get(t, "frozen").Value; got != 3 {
			t.Fatalf("Get after the thaw = %d, want 3", got)
		}
	}
}
