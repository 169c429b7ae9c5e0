package webhooks

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"code.dny.dev/ssrf"
	"github.com/prometheus/client_golang/prometheus"
)

// The relay: every process of the service runs one. It claims due events
// from the outbox (Outbox.Claim: a short transaction that leases them to
// this process with a token), calls their hooks' URLs, and records each
// attempt (Outbox.Complete, which does nothing when the lease was lost to
// another process meanwhile). An event is delivered at least once: a
// process killed between the call and its record leaves the lease to run
// out, and another process calls again, with the same id and body.

// Attempt is a claimed event, leased to this process under Token.
type Attempt struct {
	EventID  int64
	MsgID    string // the webhook-id
	Token    []byte
	Body     []byte
	Attempts int // attempts made, this one included
	// Backoffs is how many of the schedule's pauses the delivery has
	// taken: the attempts that a Retry-After paced are not among them.
	Backoffs int
	// RetryUntil is the end of the delivery's retry window (its first
	// attempt plus RetryWindow); zero: the window starts with this attempt.
	RetryUntil time.Time
	HookID     int64
	URL        string
	// Secrets are the hook's as the claim read them: the call is signed
	// with those active when it is made (Secrets.Active).
	Secrets Secrets
}

// Outcome is what one attempt came to.
type Outcome struct {
	Status     Status // Pending: try again at Next
	StatusCode int    // 0: no answer
	Next       time.Duration
	Backoffs   int  // the schedule's pauses taken, this one's included
	Succeeded  bool // a 2xx: the hook's continuous failure ends
	Gone       bool // 410: disable the hook now
}

// Outbox is the relay's view of the store (storage.Outbox).
type Outbox interface {
	// Claim leases up to limit due events to this process for lease.
	Claim(ctx context.Context, limit int, lease time.Duration) ([]Attempt, error)
	// Complete records an attempt's outcome if a's lease is still this
	// process's; a hook failing continuously for disableAfter is disabled.
	Complete(ctx context.Context, a Attempt, o Outcome, disableAfter time.Duration) error
	// Backlog is how many events are pending and how old the oldest is.
	Backlog(ctx context.Context) (int64, time.Duration, error)
}

// The schedule of retries after a failed attempt (Svix's, which Standard
// Webhooks cites): 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, each ±20 %
// at random so that the deliveries that failed together do not retry
// together; after the eighth attempt, about 28 hours after the first, the
// delivery is failed.
var schedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, 10 * time.Hour}

// MaxAttempts is how many calls a delivery gets when every pause is the
// schedule's; attempts that a Retry-After paced come on top, within
// RetryWindow.
var MaxAttempts = len(schedule) + 1

// RetryWindow is how long a delivery is retried, from its first attempt:
// the longest the schedule can take (every pause +20 %), about 33 hours,
// so that the window never cuts a schedule short. A receiver's Retry-After
// says when the next attempt comes, not how many are left: a receiver that
// answered 429 with `Retry-After: 3` once used up the eight attempts in 21
// seconds, and the event was lost. Its attempts now go on until the window
// is spent, and no Retry-After, however long, stretches it.
var RetryWindow = func() time.Duration {
	var w time.Duration
	for _, d := range schedule {
		w += d + d/5
	}
	return w
}()

// RetryAfter is the schedule's n-th pause, and false when it has none:
// the delivery has failed.
func RetryAfter(n int) (time.Duration, bool) {
	if n < 1 || n > len(schedule) {
		return 0, false
	}
	d := schedule[n-1]
	return d - d/5 + rand.N(2*d/5+1), true
}

// Timings of the relay.
const (
	// AttemptTimeout bounds one call, from dialling to the end of the
	// answer's read body.
	AttemptTimeout = 15 * time.Second
	// DefaultLease is how long a claimed event stays this process's: past
	// it another process may call again. Longer than an attempt, so that a
	// live process records its outcome first.
	DefaultLease = AttemptTimeout + 15*time.Second
	// DisableAfter is how long a hook fails continuously before it is
	// disabled (Svix: five days).
	DisableAfter = 5 * 24 * time.Hour
	// maxRetryAfter caps a receiver's Retry-After (the window's end caps
	// it further).
	maxRetryAfter = 24 * time.Hour
	// minRetryAfter is the shortest pause a Retry-After gets: a receiver
	// answering with a date a moment away is not called in a loop. (0 or
	// a past date is no Retry-After: the schedule's pause.)
	minRetryAfter = time.Second
	// answerLimit is how much of an answer's body is read: it is only
	// drained, so that the connection can be reused.
	answerLimit = 64 << 10
)

// Guard decides which addresses a hook may reach: only public unicast
// ones, per the IANA special-purpose registries (code.dny.dev/ssrf), on
// any port, unless private addresses are allowed.
type Guard struct {
	allowAll bool
	ssrf     *ssrf.Guardian
}

// NewGuard returns the guard; allowPrivate is COUNTERS_WEBHOOK_ALLOW_PRIVATE.
func NewGuard(allowPrivate bool) *Guard {
	return &Guard{allowAll: allowPrivate, ssrf: ssrf.New(ssrf.WithAnyPort())}
}

func (g *Guard) check(a netip.Addr) error {
	if g.allowAll {
		return nil
	}
	return g.ssrf.SafeAddr(a)
}

// control is the dialer's Control: it sees the address actually dialled,
// after resolution, which a check of the name at creation cannot.
func (g *Guard) control(network, address string, rc syscall.RawConn) error {
	if g.allowAll {
		return nil
	}
	return g.ssrf.Safe(network, address, rc)
}

// RelayOptions are the relay's settings.
type RelayOptions struct {
	Workers int // calls at once; default DefaultWorkers
	// Poll is how soon the outbox is asked again after an ask that found
	// fewer events than it could take; default 500ms. While asks find
	// nothing the pause doubles, up to MaxPoll (default ten Polls, 5 s):
	// an idle process asks five times a minute instead of 120, each a
	// transaction. The relay is woken at once by its own process's events
	// (Wake), and asks when a retry it scheduled or a lease it could not
	// record comes due; the longer pause only delays an event that
	// another process recorded and did not live to claim, well within
	// the minute the guide promises.
	Poll       time.Duration
	MaxPoll    time.Duration
	Guard      *Guard
	Registerer prometheus.Registerer
	Log        *slog.Logger
	// Now is the clock of the calls' webhook-timestamp, of which secrets
	// sign them, and of whether a delivery's retry window is spent;
	// default time.Now.
	Now func() time.Time
	// Lease is how long a claimed event stays this relay's; default
	// DefaultLease. One shorter than AttemptTimeout lets a slow call be
	// made again beside itself: only tests, whose receivers answer at
	// once, shorten it, so as not to wait half a minute for a lost
	// process's lease to run out.
	Lease time.Duration
}

// Relay delivers the outbox's events.
type Relay struct {
	out    Outbox
	o      RelayOptions
	client *http.Client
	m      *relayMetrics
	wake   chan struct{}
	due    dueTimes
	// scheduled is told when a due time was added, so that a relay
	// pausing longer wakes for it.
	scheduled chan struct{}
}

// dueTimes are the moments at which events this relay attempted come due
// again: a retry's, or the end of a lease whose outcome it could not
// record.
type dueTimes struct {
	mu    sync.Mutex
	times []time.Time
}

// maxDue bounds dueTimes: beyond it a retry is found by the idle polls,
// at most MaxPoll late.
const maxDue = 4096

func (r *Relay) dueAt(t time.Time) {
	r.due.mu.Lock()
	if len(r.due.times) < maxDue {
		r.due.times = append(r.due.times, t)
	}
	r.due.mu.Unlock()
	select {
	case r.scheduled <- struct{}{}:
	default:
	}
}

// take drops the times up to now and reports whether there were any, and
// how long until the next one (false: none).
func (d *dueTimes) take(now time.Time) (passed bool, next time.Duration, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	kept := d.times[:0]
	for _, t := range d.times {
		if !t.After(now) {
			passed = true
			continue
		}
		kept = append(kept, t)
		if d := t.Sub(now); !ok || d < next {
			next, ok = d, true
		}
	}
	clear(d.times[len(kept):])
	d.times = kept
	return passed, next, ok
}

// DefaultWorkers is how many calls a relay makes at once by default.
const DefaultWorkers = 16

// NewRelay returns a relay of out; Run starts it.
func NewRelay(out Outbox, o RelayOptions) *Relay {
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Poll <= 0 {
		o.Poll = 500 * time.Millisecond
	}
	if o.MaxPoll < o.Poll {
		o.MaxPoll = 10 * o.Poll
	}
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	if o.Guard == nil {
		o.Guard = NewGuard(false)
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	dialer := &net.Dialer{Timeout: 5 * time.Second, Control: o.Guard.control}
	client := &http.Client{
		Timeout: AttemptTimeout,
		Transport: &http.Transport{
			Proxy:               nil, // never from the environment: a proxy would dial for us, unchecked
			DialContext:         dialer.DialContext,
			TLSHandshakeTimeout: 5 * time.Second,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
		},
		// A redirect is a failure: following it would reach an address the
		// hook's owner never registered.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Relay{out: out, o: o, client: client, m: newRelayMetrics(o.Registerer), wake: make(chan struct{}, 1), scheduled: make(chan struct{}, 1)}
}

// Wake asks the relay to look at the outbox now rather than at its next
// poll: an event was just committed.
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx ends, then waits for the calls under way.
func (r *Relay) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	free := make(chan struct{}, r.o.Workers)
	for range r.o.Workers {
		free <- struct{}{}
	}
	backlog := time.NewTicker(5 * time.Second)
	defer backlog.Stop()
	poll := time.NewTimer(0)
	defer poll.Stop()
	pollAt := time.Now()
	idle := r.o.Poll // the pause after an ask that finds nothing
	for {
		select {
		case <-ctx.Done():
			return
		case <-backlog.C:
			r.measure(ctx)
			continue
		case <-r.wake:
			idle = r.o.Poll
		case <-poll.C:
		case <-r.scheduled:
			// An attempt of this relay's comes due again: ask then, if
			// that is before the next ask.
			now := time.Now()
			passed, next, ok := r.due.take(now)
			if passed {
				idle, next, ok = r.o.Poll, 0, true
			}
			if ok && now.Add(next).Before(pollAt) {
				poll.Reset(next)
				pollAt = now.Add(next)
			}
			continue
		}
		if passed, _, _ := r.due.take(time.Now()); passed {
			idle = r.o.Poll // it may come due a moment later by MySQL's clock
		}
		// Take as many as there are free workers.
		n := 0
		for len(free) > 0 {
			<-free
			n++
		}
		if n == 0 { // all busy: wait for one
			select {
			case <-ctx.Done():
				return
			case <-free:
				n = 1
			}
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		claimed, err := r.out.Claim(cctx, n, r.o.Lease)
		cancel()
		leaseEnd := time.Now().Add(r.o.Lease) // after MySQL's, which began in Claim
		if err != nil && ctx.Err() == nil {
			r.o.Log.Warn("webhooks: claiming due events failed", "error", err)
		}
		for i := len(claimed); i < n; i++ {
			free <- struct{}{}
		}
		for _, a := range claimed {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { free <- struct{}{} }()
				r.deliver(ctx, a, leaseEnd)
			}()
		}
		var wait time.Duration
		switch {
		case len(claimed) == n && n > 0:
			wait = 0 // there may be more
		case len(claimed) > 0:
			idle, wait = r.o.Poll, r.o.Poll
		default:
			wait, idle = idle, min(2*idle, r.o.MaxPoll)
		}
		now := time.Now()
		if passed, next, ok := r.due.take(now); passed {
			wait, idle = 0, r.o.Poll
		} else if ok && next < wait {
			wait = next
		}
		poll.Reset(wait)
		pollAt = now.Add(wait)
	}
}

// deliver makes one attempt and records it. A process stopping during the
// call records nothing: the lease runs out and another process calls
// again.
func (r *Relay) deliver(ctx context.Context, a Attempt, leaseEnd time.Time) {
	o := r.call(ctx, a)
	if ctx.Err() != nil {
		return
	}
	r.m.deliveries.WithLabelValues(outcomeLabel(o)).Inc()
	// The record has its own deadline: the call may have used up ctx's.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.out.Complete(rctx, a, o, DisableAfter); err != nil {
		r.o.Log.Warn("webhooks: recording an attempt failed; the lease will run out and it is sent again", "webhook_id", a.MsgID, "error", err)
		r.dueAt(leaseEnd)
	} else if o.Status == Pending {
		r.dueAt(time.Now().Add(o.Next))
	}
}

// call sends the attempt and says what came of it.
func (r *Relay) call(ctx context.Context, a Attempt) Outcome {
	now := r.o.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.URL, bytes.NewReader(a.Body))
	if err != nil {
		return r.failed(a, 0, 0)
	}
	sig, err := Sign(a.Secrets.Active(now), a.MsgID, now, a.Body)
	if err != nil {
		return r.failed(a, 0, 0)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "countersvc-webhooks")
	req.Header.Set("webhook-id", a.MsgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("webhook-signature", sig)
	res, err := r.client.Do(req)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			// Without the URL, which url.Error names: its query may carry
			// the receiver's own token.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			r.o.Log.Info("webhooks: call failed", "webhook_id", a.MsgID, "hook", a.HookID, "error", err)
		}
		return r.failed(a, 0, 0)
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, answerLimit))
	res.Body.Close()
	code := res.StatusCode
	if code < 200 || code >= 300 {
		// Said, as a failed connection is: a receiver that answers 404
		// (a hook registered with the wrong path) was otherwise silent
		// until someone read the deliveries.
		r.o.Log.Info("webhooks: the receiver refused the call", "webhook_id", a.MsgID, "hook", a.HookID, "status", code)
	}
	switch {
	case code >= 200 && code < 300:
		return Outcome{Status: Delivered, StatusCode: code, Succeeded: true}
	case code == http.StatusGone:
		return Outcome{Status: Failed, StatusCode: code, Gone: true}
	case code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable:
		return r.failed(a, code, retryAfter(res.Header.Get("Retry-After"), now))
	default: // 3xx included: no redirect is followed
		return r.failed(a, code, 0)
	}
}

// failed is the outcome of a failed attempt: the next after the
// receiver's Retry-After when it gave one (which takes none of the
// schedule's pauses), else after the schedule's next pause; never past the
// end of the retry window. Failed for good once the window is spent or the
// schedule has no pause left.
func (r *Relay) failed(a Attempt, code int, after time.Duration) Outcome {
	o := Outcome{Status: Failed, StatusCode: code, Backoffs: a.Backoffs}
	left := RetryWindow
	if !a.RetryUntil.IsZero() {
		left = a.RetryUntil.Sub(r.o.Now())
	}
	if left <= 0 {
		return o
	}
	if after > 0 {
		o.Next = max(after, minRetryAfter)
	} else {
		next, ok := RetryAfter(a.Backoffs + 1)
		if !ok {
			return o
		}
		o.Next, o.Backoffs = next, a.Backoffs+1
	}
	// The last attempt comes at the window's end at the latest: a
	// Retry-After of days does not put it off past the window.
	o.Status, o.Next = Pending, min(o.Next, left)
	return o
}

// retryAfter parses a Retry-After header: seconds or an HTTP date; 0 when
// absent or unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	if s, err := strconv.ParseInt(v, 10, 64); err == nil && s >= 0 {
		d = time.Duration(min(s, int64(maxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), maxRetryAfter)
}

// Sign is the webhook-signature of a call as Standard Webhooks defines it:
// for each secret, "v1," and the base64 HMAC-SHA256, keyed by the
// secret's bytes, of "id.timestamp.body"; several are separated by spaces,
// as the spec allows, so that a receiver holding any one of the secrets
// verifies the call (a rotation's grace).
func Sign(secrets []string, msgID string, at time.Time, body []byte) (string, error) {
	signed := []byte(msgID + "." + strconv.FormatInt(at.Unix(), 10) + ".")
	sigs := make([]string, len(secrets))
	for i, secret := range secrets {
		key, err := secretKey(secret)
		if err != nil {
			return "", err
		}
		mac := hmac.New(sha256.New, key)
		mac.Write(signed)
		mac.Write(body)
		sigs[i] = "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	}
	return strings.Join(sigs, " "), nil
}

// measure updates the backlog's gauges.
func (r *Relay) measure(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	n, age, err := r.out.Backlog(ctx)
	if err != nil {
		return // the gauges keep their last values
	}
	r.m.depth.Set(float64(n))
	r.m.oldest.Set(age.Seconds())
}

// The outcomes of attempts, as /metrics labels them.
const (
	outcomeDelivered = "delivered"
	outcomeRetry     = "retry"  // failed, to be tried again
	outcomeFailed    = "failed" // failed for good
	outcomeGone      = "gone"   // 410: the hook is disabled
)

func outcomeLabel(o Outcome) string {
	switch {
	case o.Succeeded:
		return outcomeDelivered
	case o.Gone:
		return outcomeGone
	case o.Status == Pending:
		return outcomeRetry
	default:
		return outcomeFailed
	}
}

type relayMetrics struct {
	deliveries *prometheus.CounterVec
	depth      prometheus.Gauge
	oldest     prometheus.Gauge
}

func newRelayMetrics(reg prometheus.Registerer) *relayMetrics {
	m := &relayMetrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "counters_webhook_deliveries_total",
			Help: "Attempts to deliver webhook events made by this process, by outcome.",
		}, []string{"outcome"}),
		depth: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "counters_webhook_queue_depth",
			Help: "Webhook events pending delivery, in every process (measured every 5 s).",
		}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "counters_webhook_oldest_pending_seconds",
			Help: "Age of the oldest webhook event pending delivery, 0 when none (measured every 5 s).",
		}),
	}
	for _, o := range []string{outcomeDelivered, outcomeRetry, outcomeFailed, outcomeGone} {
		m.deliveries.WithLabelValues(o)
	}
	if reg != nil {
		reg.MustRegister(m.deliveries, m.depth, m.oldest)
	}
	return m
}
