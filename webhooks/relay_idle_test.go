package webhooks_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/webhooks"
)

// dueOutbox holds attempts until their due time, as the outbox's
// next_attempt_at does, puts a pending outcome's attempt back due after
// its pause, and counts the claims.
type dueOutbox struct {
	mu      sync.Mutex
	pending []webhooks.Attempt
	due     []time.Time
	claims  atomic.Int64
	claimed chan time.Time // each claim that took an attempt
}

func (o *dueOutbox) Claim(_ context.Context, limit int, _ time.Duration) ([]webhooks.Attempt, error) {
	o.claims.Add(1)
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []webhooks.Attempt
	now := time.Now()
	for i := 0; i < len(o.pending) && len(out) < limit; {
		if o.due[i].After(now) {
			i++
			continue
		}
		out = append(out, o.pending[i])
		o.pending, o.due = append(o.pending[:i], o.pending[i+1:]...), append(o.due[:i], o.due[i+1:]...)
	}
	if len(out) > 0 {
		o.claimed <- now
	}
	return out, nil
}

func (o *dueOutbox) Complete(_ context.Context, a webhooks.Attempt, out webhooks.Outcome, _ time.Duration) error {
	if out.Status == webhooks.Pending {
		o.mu.Lock()
		o.pending, o.due = append(o.pending, a), append(o.due, time.Now().Add(out.Next))
		o.mu.Unlock()
	}
	return nil
}

func (o *dueOutbox) Backlog(context.Context) (int64, time.Duration, error) { return 0, 0, nil }

// runRelay runs a relay over o until the test ends.
func runRelay(t *testing.T, o webhooks.Outbox, poll time.Duration) *webhooks.Relay {
	relay := webhooks.NewRelay(o, webhooks.RelayOptions{Guard: webhooks.NewGuard(true), Poll: poll, MaxPoll: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); relay.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return relay
}

// An idle relay asks the outbox less and less often, the pause doubling
// from Poll to MaxPoll, and hears Wake at once.
func TestAnIdleRelayBacksOffAndHearsWake(t *testing.T) {
	o := &dueOutbox{claimed: make(chan time.Time, 4)}
	relay := runRelay(t, o, 20*time.Millisecond)
	// Asks at 0, 20, 60, 140, 300, 620, 1260 ms: about 7 in a second and
	// a half where every Poll would be 75.
	time.Sleep(1500 * time.Millisecond)
	if n := o.claims.Load(); n < 3 || n > 12 {
		t.Fatalf("%d asks in 1.5 s of an empty outbox; want about 7 (pauses doubling from 20 ms)", n)
	}
	// The pause is now over a second.
	o.mu.Lock()
	o.pending, o.due = append(o.pending, webhooks.Attempt{EventID: 1}), append(o.due, time.Now())
	o.mu.Unlock()
	woken := time.Now()
	relay.Wake()
	select {
	case at := <-o.claimed:
		if d := at.Sub(woken); d > 500*time.Millisecond {
			t.Fatalf("claimed %v after Wake", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Wake: no claim within 5 s")
	}
}

// A retry that the relay scheduled itself is made when it comes due, not
// at the relay's next idle ask.
func TestARelaysOwnRetryIsMadeWhenDue(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", "2") // the retry is due in two seconds
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	o := &dueOutbox{claimed: make(chan time.Time, 4), pending: []webhooks.Attempt{{EventID: 1, MsgID: "msg_1", Body: []byte(`{}`), Attempts: 1, URL: srv.URL,
		Secrets: webhooks.Secrets{Current: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}}, due: []time.Time{time.Now()}}
	// Idle asks 0.9, 1.8 and 3.6 s after the first claim: without its
	// own due time the relay would make the retry at 3.6 s.
	runRelay(t, o, 900*time.Millisecond)
	var first, second time.Time
	for _, at := range []*time.Time{&first, &second} {
		select {
		case *at = <-o.claimed:
		case <-time.After(10 * time.Second):
			t.Fatalf("claims at %v, %v: not two within 10 s", first, second)
		}
	}
	if d := second.Sub(first); d < 2*time.Second || d > 3*time.Second {
		t.Fatalf("the retry was claimed %v after the first attempt; want about 2 s (its Retry-After), not at an idle ask (3.6 s)", d)
	}
}
