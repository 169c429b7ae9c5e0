package systemtest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/webhooks"
)

// answer is what the receiver says to one attempt, and what the delivery
// is to look like after it.
type answer struct {
	code       int
	retryAfter string
	// left, when not 0, puts the relay's clock this long before the end
	// of the delivery's retry window for the attempt (negative: past it),
	// which is how a day passes here without sleeping through it.
	left       time.Duration
	status     webhooks.Status
	pauseAtMin time.Duration // the pause before the next attempt, when pending
	pauseAtMax time.Duration
}

func repeat(n int, a answer) []answer {
	out := make([]answer, n)
	for i := range out {
		out[i] = a
	}
	return out
}

// A Retry-After says when the next attempt comes, not how many are left:
// a receiver that rate-limited with `Retry-After: 3` once used up the
// schedule's eight attempts in 21 seconds and the event was failed for
// good. A delivery is failed once its retry window (about a day, the
// schedule's span) is spent, however many attempts a Retry-After paced;
// a Retry-After of 0 or a moment does not make the relay call in a loop,
// and one of a day does not stretch the window. Driven through the real
// relay and the real store: the attempts are made due by moving the row's
// next_attempt_at, and the relay's clock is moved to the window's end.
func TestARetryAfterPacesAttemptsAndTheWindowEndsTheDelivery(t *testing.T) {
	rateLimited := answer{code: 429, retryAfter: "3", status: webhooks.Pending, pauseAtMin: 3 * time.Second, pauseAtMax: 3 * time.Second}
	// The schedule's pauses, ±20 %.
	plain := func(d time.Duration) answer {
		return answer{code: 500, status: webhooks.Pending, pauseAtMin: d - d/5, pauseAtMax: d + d/5}
	}
	tests := []struct {
		name    string
		answers []answer
	}{
		{"429 with Retry-After: 3 is retried until the window is spent", append(repeat(12, rateLimited),
			answer{code: 429, retryAfter: "3", left: -time.Second, status: webhooks.Failed})},
		{"a 500 after a run of 429s takes the schedule's first pause, not its last", append(repeat(9, rateLimited),
			plain(5*time.Second), plain(5*time.Minute))},
		{"Retry-After: 0 is the schedule's pause, not a loop", []answer{
			{code: 503, retryAfter: "0", status: webhooks.Pending, pauseAtMin: 4 * time.Second, pauseAtMax: 6 * time.Second},
			{code: 503, retryAfter: "0", status: webhooks.Pending, pauseAtMin: 4 * time.Minute, pauseAtMax: 6 * time.Minute}}},
		{"a date a moment away is a second's pause", []answer{
			{code: 503, retryAfter: "moment", status: webhooks.Pending, pauseAtMin: time.Second, pauseAtMax: time.Second}}},
		{"a Retry-After of a day near the window's end waits for the end only", []answer{
			{code: 429, retryAfter: "86400", status: webhooks.Pending, pauseAtMin: 24 * time.Hour, pauseAtMax: 24 * time.Hour},
			{code: 429, retryAfter: "86400", left: time.Hour, status: webhooks.Pending, pauseAtMin: time.Hour, pauseAtMax: time.Hour},
			{code: 429, retryAfter: "86400", left: -time.Millisecond, status: webhooks.Failed}}},
		{"plain failures still fail after the schedule's eighth attempt", []answer{
			plain(5 * time.Second), plain(5 * time.Minute), plain(30 * time.Minute), plain(2 * time.Hour),
			plain(5 * time.Hour), plain(10 * time.Hour), plain(10 * time.Hour), {code: 500, status: webhooks.Failed}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWindowed(t)
			for i, a := range tc.answers {
				attempts, status, code, pause := w.attempt(t, a)
				if attempts != i+1 || status != a.status || code != a.code {
					t.Fatalf("attempt %d: attempts %d, %s, last status code %d; want %d, %s, %d", i+1, attempts, status, code, i+1, a.status, a.code)
				}
				// The pause is read back from the row a moment after it
				// was written: some slack below, less than the half
				// second a moment's Retry-After would be paced at
				// without its floor; and a little above, where MariaDB's
				// UTC_TIMESTAMP(6) of the later read was measured a
				// fraction of a millisecond behind the write's.
				if status == webhooks.Pending && (pause <= a.pauseAtMin-400*time.Millisecond || pause > a.pauseAtMax+50*time.Millisecond) {
					t.Fatalf("attempt %d: next attempt in %v, want %v to %v", i+1, pause, a.pauseAtMin, a.pauseAtMax)
				}
			}
		})
	}
}

// windowed is a relay delivering one hook's event, through the real
// store, to a receiver that answers as told.
type windowed struct {
	db      *storage.DB
	eventID int64
	clock   *testenv.Clock
	gate    *gate
	start   time.Time // the relay's clock, half a second past a whole second

	mu  sync.Mutex
	ans answer
}

func newWindowed(t *testing.T) *windowed {
	t.Helper()
	ctx := context.Background()
	store, db := storetest.OpenStore(t, storetest.MigratedDSN(t))
	var rec *storage.HookRecorder
	hooks := storage.NewHookStore(db, func(ctx context.Context) {
		if err := rec.Reload(ctx); err != nil {
			t.Error(err)
		}
	})
	rec = storage.NewHookRecorder(hooks, nil)
	store.Record(rec)
	store.Observe(rec)

	w := &windowed{db: db, start: time.Now().Truncate(time.Second).Add(500 * time.Millisecond)}
	w.clock = testenv.NewClock(w.start)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		w.mu.Lock()
		a := w.ans
		w.mu.Unlock()
		ra := a.retryAfter
		if ra == "moment" { // half a second after the relay's clock, in the header's whole seconds
			ra = w.clock.Now().Add(time.Second).Format(http.TimeFormat)
		}
		if ra != "" {
			rw.Header().Set("Retry-After", ra)
		}
		rw.WriteHeader(a.code)
	}))
	t.Cleanup(srv.Close)

	hook, err := webhooks.CreateRequest{URL: "https://receiver.example/hook", Name: "limited/x", Every: 1}.Validate()
	if err != nil {
		t.Fatal(err)
	}
	hook.URL, hook.Secret = srv.URL, "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	if err := hooks.CreateHook(ctx, hook, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Increment(ctx, "limited/x", 1); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, "SELECT id FROM webhook_event WHERE hook_id = ?", hook.ID).Scan(&w.eventID); err != nil {
		t.Fatal(err)
	}

	rctx, cancel := context.WithCancel(ctx)
	w.gate = &gate{out: hooks}
	relay := webhooks.NewRelay(w.gate, webhooks.RelayOptions{Guard: webhooks.NewGuard(true), Poll: 10 * time.Millisecond, Now: w.clock.Now})
	done := make(chan struct{})
	go func() { defer close(done); relay.Run(rctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return w
}

// attempt makes the event due, lets the relay call once, and reads back
// the row: its attempts, status, last status code and the pause before
// its next attempt.
func (w *windowed) attempt(t *testing.T, a answer) (int, webhooks.Status, int, time.Duration) {
	t.Helper()
	ctx := context.Background()
	var before int
	if err := w.db.QueryRowContext(ctx, "SELECT attempts FROM webhook_event WHERE id = ?", w.eventID).Scan(&before); err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	w.ans = a
	w.mu.Unlock()
	w.clock.Set(w.start)
	if a.left != 0 {
		var until time.Time
		if err := w.db.QueryRowContext(ctx, "SELECT retry_until FROM webhook_event WHERE id = ?", w.eventID).Scan(&until); err != nil {
			t.Fatal(err)
		}
		w.clock.Set(until.Add(-a.left))
	}
	if _, err := w.db.ExecContext(ctx, "UPDATE webhook_event SET next_attempt_at = UTC_TIMESTAMP(6) WHERE id = ?", w.eventID); err != nil {
		t.Fatal(err)
	}
	w.gate.open.Store(true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		var attempts, status, code int
		var recorded bool
		var pause int64
		err := w.db.QueryRowContext(ctx, `SELECT attempts, status, COALESCE(last_status_code, 0), claim_token IS NULL,
			TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), next_attempt_at) FROM webhook_event WHERE id = ?`, w.eventID).
			Scan(&attempts, &status, &code, &recorded, &pause)
		if err != nil {
			t.Fatal(err)
		}
		if attempts > before && recorded {
			return attempts, [...]webhooks.Status{webhooks.Pending, webhooks.Delivered, webhooks.Failed}[status], code, time.Duration(pause) * time.Microsecond
		}
		if time.Now().After(deadline) {
			t.Fatalf("attempt %d was not recorded", before+1)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gate lets the relay claim from the store only once each time the test
// opens it: a pause of a few seconds (the schedule's first) must not let
// the relay call again, on a loaded machine, before the test has read the
// row. The store behind it is the real one.
type gate struct {
	out  webhooks.Outbox
	open atomic.Bool
}

func (g *gate) Claim(ctx context.Context, limit int, lease time.Duration) ([]webhooks.Attempt, error) {
	if !g.open.Load() {
		return nil, nil
	}
	as, err := g.out.Claim(ctx, limit, lease)
	if len(as) > 0 {
		g.open.Store(false)
	}
	return as, err
}

func (g *gate) Complete(ctx context.Context, a webhooks.Attempt, o webhooks.Outcome, disableAfter time.Duration) error {
	return g.out.Complete(ctx, a, o, disableAfter)
}

func (g *gate) Backlog(ctx context.Context) (int64, time.Duration, error) { return g.out.Backlog(ctx) }
