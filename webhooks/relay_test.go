package webhooks_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/webhooks"
)

// outbox hands the relay one attempt and keeps the outcome: the relay's
// own logic (the dialled address's check, redirects), without MySQL.
type outbox struct {
	mu      sync.Mutex
	pending []webhooks.Attempt
	done    chan webhooks.Outcome
}

func (o *outbox) Claim(_ context.Context, limit int, _ time.Duration) ([]webhooks.Attempt, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := min(limit, len(o.pending))
	out := o.pending[:n]
	o.pending = o.pending[n:]
	return out, nil
}

func (o *outbox) Complete(_ context.Context, _ webhooks.Attempt, out webhooks.Outcome, _ time.Duration) error {
	o.done <- out
	return nil
}

func (o *outbox) Backlog(context.Context) (int64, time.Duration, error) { return 0, 0, nil }

// deliverOnce runs a relay with opts over one attempt to url and returns
// its outcome.
func deliverOnce(t *testing.T, opts webhooks.RelayOptions, url string) webhooks.Outcome {
	t.Helper()
	o := &outbox{done: make(chan webhooks.Outcome, 1), pending: []webhooks.Attempt{{
		EventID: 1, MsgID: "msg_1", Body: []byte(`{}`), Attempts: 1, URL: url, Secrets: webhooks.Secrets{Current: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
	}}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts.Poll = 10 * time.Millisecond
	go webhooks.NewRelay(o, opts).Run(ctx)
	select {
	case out := <-o.done:
		return out
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome")
		return webhooks.Outcome{}
	}
}

// The address actually dialled is checked at each delivery: a URL that
// resolves to loopback now (DNS rebinding, or a hook made while private
// addresses were allowed) is never called.
func TestTheRelayNeverDialsAPrivateAddress(t *testing.T) {
	var called atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { called.Store(true) }))
	defer srv.Close()
	out := deliverOnce(t, webhooks.RelayOptions{Guard: webhooks.NewGuard(false)}, srv.URL)
	if called.Load() || out.Status != webhooks.Pending || out.StatusCode != 0 || out.Next <= 0 {
		t.Fatalf("called %v, outcome %+v", called.Load(), out)
	}
	if out := deliverOnce(t, webhooks.RelayOptions{Guard: webhooks.NewGuard(true)}, srv.URL); !out.Succeeded || !called.Load() {
		t.Fatalf("with private addresses allowed: %+v", out)
	}
}

// A redirect is a failed attempt, to be retried; it is never followed.
func TestRedirectsFailAndAreNotFollowed(t *testing.T) {
	var followed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Store(true)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	out := deliverOnce(t, webhooks.RelayOptions{Guard: webhooks.NewGuard(true)}, srv.URL)
	if followed.Load() || out.Succeeded || out.StatusCode != http.StatusTemporaryRedirect || out.Status != webhooks.Pending {
		t.Fatalf("followed %v, outcome %+v", followed.Load(), out)
	}
}

// A call the receiver refuses (a 404 from a hook registered with the
// wrong path) is said in the log, as a call that could not connect is,
// and is retried.
func TestARefusedCallIsLogged(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	out := deliverOnce(t, webhooks.RelayOptions{Guard: webhooks.NewGuard(true), Log: log}, srv.URL)
	if out.Status != webhooks.Pending || out.StatusCode != http.StatusNotFound {
		t.Fatalf("outcome %+v, want pending after a 404", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := logs.String(); !strings.Contains(got, "the receiver refused the call") || !strings.Contains(got, "status=404") {
		t.Errorf("log %q says nothing of the 404", got)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
