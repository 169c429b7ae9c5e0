package storage_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/webhooks"
)

// alerting is one process of the service as far as alerts go: its
// counter store, hooks, history and evaluator, all on one clock the test
// moves (the store's, by which history counts the increments).
type alerting struct {
	store *storage.CounterStore
	hooks *storage.HookStore
	svc   *webhooks.Service
	eval  *webhooks.Evaluator
	rec   *storage.HookRecorder
}

func newAlerting(t *testing.T, dsn string, clock *testenv.Clock) *alerting {
	t.Helper()
	store, db := storetest.OpenStore(t, dsn)
	store.Now = clock.Now
	a := &alerting{store: store}
	a.hooks = storage.NewHookStore(db, func(ctx context.Context) {
		if err := a.rec.Reload(ctx); err != nil {
			t.Error(err)
		}
	})
	a.hooks.Now = clock.Now
	a.rec = storage.NewHookRecorder(a.hooks, nil)
	store.Record(a.rec)
	store.Observe(a.rec)
	counts := storage.HistoryOf(store)
	a.svc = webhooks.NewService(a.hooks, webhooks.Options{Guard: webhooks.NewGuard(true), Now: clock.Now, Counts: counts})
	a.eval = &webhooks.Evaluator{Store: a.hooks, Counts: counts, Now: clock.Now}
	return a
}

func (a *alerting) alert(t *testing.T, req webhooks.CreateRequest) *webhooks.Hook {
	t.Helper()
	req.URL = "https://receiver.example/alerts"
	h, err := a.svc.Create(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (a *alerting) inc(t *testing.T, name string, by int64) {
	t.Helper()
	if _, err := a.store.Increment(context.Background(), name, by); err != nil {
		t.Fatal(err)
	}
}

func (a *alerting) pass(t *testing.T) {
	t.Helper()
	if _, err := a.eval.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// alertEvents are the hook's events, oldest first.
func (a *alerting) alertEvents(t *testing.T, hookID int64) []webhooks.AlertEvent {
	t.Helper()
	return recorded[webhooks.AlertEvent](t, a.hooks, hookID)
}

// kinds is the events' types and sums, for comparing.
func kinds(es []webhooks.AlertEvent) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Type+" "+strconv.FormatInt(e.Data.Sum, 10))
	}
	return out
}

// A quarter hour's start, 10:00 UTC, and a moment 7 minutes into it.
var alertDay = time.Date(2026, 3, 2, 10, 7, 0, 0, time.UTC)

// With no increment at all, a silence alert fires once its window has
// passed since the hook's creation, not a moment before, and a step ends
// it; each transition is one event with the window it summed.
func TestASilenceAlertFiresWhenItsWindowPassesWithoutIncrements(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock(alertDay)
	a := newAlerting(t, storetest.MigratedDSN(t), clock)
	hook := a.alert(t, webhooks.CreateRequest{Name: "shop/quiet", Window: "1h", Below: ptr(1)})

	steps := []struct {
		name string
		at   time.Duration // after the creation
		inc  int64
		want []string
	}{
		{"at creation", 0, 0, nil},
		{"a second before the window has passed", time.Hour - time.Second, 0, nil},
		{"the window has passed", time.Hour, 0, []string{"alert.started 0"}},
		{"still silent a pass later", time.Hour + 30*time.Second, 0, nil},
		{"a sale ends it", time.Hour + time.Minute, 1, []string{"alert.ended 1"}},
		{"more sales change nothing", 2 * time.Hour, 3, nil},
		// The window's first quarter hour still holds the last sales, but
		// they lie before the window: silence again within a pass, not
		// when the window leaves their quarter hour behind.
		{"a pass after the window has left the last sales behind", 3*time.Hour + 30*time.Second, 0, []string{"alert.started 0"}},
	}
	seen := 0
	for _, s := range steps {
		clock.Set(alertDay.Add(s.at))
		if s.inc != 0 {
			a.inc(t, "shop/quiet", s.inc)
		}
		a.pass(t)
		got := a.alertEvents(t, hook.ID)[seen:]
		seen += len(got)
		if !slices.Equal(kinds(got), s.want) {
			t.Fatalf("%s: events %v, want %v", s.name, kinds(got), s.want)
		}
	}
	started := a.alertEvents(t, hook.ID)[0]
	if d := started.Data; d.Name != "shop/quiet" || d.Window != "1h" || d.Below == nil || *d.Below != 1 ||
		!d.From.Equal(alertDay) || !d.To.Equal(alertDay.Add(time.Hour)) || !started.Timestamp.Equal(d.To) {
		t.Fatalf("started: %+v", started)
	}
}

// A rate alert sums the steps of its window over whole quarter hours, and
// not those its creation's quarter hour held before it; on a prefix, the
// steps of every counter under it.
func TestARateAlertSumsItsWindowFromHistory(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock(alertDay.Add(-5 * time.Minute)) // 10:02
	a := newAlerting(t, storetest.MigratedDSN(t), clock)
	a.inc(t, "books/a", 40) // before the hook, in its quarter hour
	clock.Set(alertDay)
	name := a.alert(t, webhooks.CreateRequest{Name: "books/a", Window: "15m", Above: ptr(10)})
	prefix := a.alert(t, webhooks.CreateRequest{Prefix: "books/", Window: "15m", Above: ptr(10)})

	steps := []struct {
		name       string
		at         time.Time
		incs       map[string]int64
		wantName   []string
		wantPrefix []string
	}{
		{"steps before the hook do not count", alertDay.Add(time.Minute), nil, nil, nil},
		{"9 after it", alertDay.Add(2 * time.Minute), map[string]int64{"books/a": 9}, nil, nil},
		{"10 under the prefix", alertDay.Add(3 * time.Minute), map[string]int64{"books/b": 1}, nil, []string{"alert.started 10"}},
		{"10 of the name", alertDay.Add(4 * time.Minute), map[string]int64{"books/a": 1}, []string{"alert.started 10"}, nil},
		// 10:23: the window is 10:08-10:23, widened to 10:00: the steps of 10:08-10:14 still count
		{"widened to the quarter hour", alertDay.Add(16 * time.Minute), nil, nil, nil},
		// 10:31: the window 10:16-10:31 touches 10:15 and 10:30: none of the steps
		{"past the window", alertDay.Add(24 * time.Minute), nil, []string{"alert.ended 0"}, []string{"alert.ended 0"}},
		{"a step of another name", alertDay.Add(25 * time.Minute), map[string]int64{"books/c": 12}, nil, []string{"alert.started 12"}},
	}
	var seenName, seenPrefix int
	for _, s := range steps {
		clock.Set(s.at)
		for n, by := range s.incs {
			a.inc(t, n, by)
		}
		a.pass(t)
		gotName, gotPrefix := a.alertEvents(t, name.ID)[seenName:], a.alertEvents(t, prefix.ID)[seenPrefix:]
		seenName, seenPrefix = seenName+len(gotName), seenPrefix+len(gotPrefix)
		if !slices.Equal(kinds(gotName), s.wantName) || !slices.Equal(kinds(gotPrefix), s.wantPrefix) {
			t.Fatalf("%s: name's events %v, prefix's %v; want %v and %v", s.name, kinds(gotName), kinds(gotPrefix), s.wantName, s.wantPrefix)
		}
	}
}

// A week's window sums the days the roll-up packed into their months as
// it sums today's quarter hours: the first and the last day in quarter
// hours, those between as their totals.
func TestAWeeksWindowSumsRolledUpDays(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := testenv.NewClock(created)
	a := newAlerting(t, storetest.MigratedDSN(t), clock)
	hook := a.alert(t, webhooks.CreateRequest{Prefix: "week/", Window: "7d", Above: ptr(10)})
	// 8 in all, before today; each step moves the one before from the
	// counter's slot into its day's row, which the roll-up then packs (the
	// last stays in the slot).
	for _, at := range []time.Duration{time.Hour, 26 * time.Hour, 50*time.Hour + 45*time.Minute, 4 * 24 * time.Hour} {
		clock.Set(created.Add(at))
		a.inc(t, "week/a", 2)
	}
	clock.Set(created.Add(6*24*time.Hour + 3*time.Hour)) // March 7, noon
	rollup := &history.Rollup{Store: storage.HistoryOf(a.store), Now: clock.Now}
	if n, err := rollup.Pass(context.Background()); err != nil || n == 0 {
		t.Fatalf("roll-up: %d days, %v; want some", n, err)
	}
	a.pass(t)
	if got := kinds(a.alertEvents(t, hook.ID)); len(got) != 0 {
		t.Fatalf("events %v at a sum of 8, want none", got)
	}
	a.inc(t, "week/today", 2)
	a.pass(t)
	if got, want := kinds(a.alertEvents(t, hook.ID)), []string{"alert.started 10"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	// March 8, 10:15: the window (from March 1, 10:15) has left the first step.
	clock.Set(time.Date(2026, 3, 8, 10, 15, 0, 0, time.UTC))
	a.pass(t)
	if got, want := kinds(a.alertEvents(t, hook.ID)), []string{"alert.started 10", "alert.ended 8"}; !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// Two processes evaluating at once, round after round, record each
// transition once; so does a process that read the state before the
// other's transition committed, and a process started anew.
func TestEachTransitionIsOneEventAcrossProcessesAndRestarts(t *testing.T) {
	t.Parallel()
	dsn := storetest.MigratedDSN(t)
	clock := testenv.NewClock(alertDay)
	a, b := newAlerting(t, dsn, clock), newAlerting(t, dsn, clock)
	hook := a.alert(t, webhooks.CreateRequest{Name: "shop/rush", Window: "15m", Above: ptr(3)})
	ctx := context.Background()

	stale, err := b.hooks.AlertHooks(ctx) // b reads the state now, and moves it later
	if err != nil || len(stale) != 1 {
		t.Fatalf("AlertHooks = %v, %v", stale, err)
	}
	var want []string
	for round := range 6 {
		clock.Set(alertDay.Add(time.Duration(round) * time.Hour))
		if round%2 == 0 {
			a.inc(t, "shop/rush", 3)
			want = append(want, "alert.started 3")
		} else {
			want = append(want, "alert.ended 0")
		}
		var wg sync.WaitGroup
		for _, p := range []*alerting{a, b, a, b} {
			wg.Go(func() {
				if _, err := p.eval.Pass(ctx); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	if got := kinds(a.alertEvents(t, hook.ID)); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if moved, err := b.hooks.MoveAlert(ctx, &stale[0], true, clock.Now(), []byte(`{}`)); err != nil || moved {
		t.Fatalf("a move from a state read before six transitions: moved %v, %v; want nothing", moved, err)
	}
	current, err := b.hooks.AlertHooks(ctx)
	if err != nil || len(current) != 1 {
		t.Fatalf("AlertHooks = %v, %v", current, err)
	}
	if moved, err := b.hooks.MoveAlert(ctx, &current[0], !current[0].Alert.Holds, clock.Now().Add(-time.Second), []byte(`{}`)); err != nil || moved {
		t.Fatalf("a move found by a clock behind the last one's: moved %v, %v; want nothing", moved, err)
	}

	// A restart: a new process on the same database, the condition holding.
	clock.Set(alertDay.Add(6 * time.Hour))
	a.inc(t, "shop/rush", 5)
	a.pass(t)
	restarted := newAlerting(t, dsn, clock)
	restarted.pass(t)
	clock.Set(alertDay.Add(7 * time.Hour))
	restarted.pass(t)
	a.pass(t)
	want = append(want, "alert.started 5", "alert.ended 0")
	if got := kinds(a.alertEvents(t, hook.ID)); !slices.Equal(got, want) {
		t.Fatalf("after a restart: events %v, want %v", got, want)
	}
}

// While MySQL is down a pass fails and records nothing; once it is back,
// the transition that happened meanwhile is recorded once, whichever
// process finds it first, and a silence alert whose window passed during
// the outage fires at the first pass after it.
func TestAnOutageOfMySQLDelaysATransitionAndNeverRepeatsIt(t *testing.T) {
	t.Parallel()
	m := testenv.StartMariaDB(t)
	dsn := m.DSN("alerts")
	clock := testenv.NewClock(alertDay)
	a, b := newAlerting(t, dsn, clock), newAlerting(t, dsn, clock)
	silence := a.alert(t, webhooks.CreateRequest{Name: "shop/quiet", Window: "1h", Below: ptr(1)})
	rate := a.alert(t, webhooks.CreateRequest{Name: "shop/rush", Window: "1h", Above: ptr(2)})
	a.inc(t, "shop/rush", 2)
	a.pass(t)
	b.pass(t)

	m.Kill()
	// 11:17: the silence has started, and the rush's window (10:17-11:17,
	// widened to 10:15) no longer holds its steps of 10:07.
	clock.Set(alertDay.Add(time.Hour + 10*time.Minute))
	for _, p := range []*alerting{a, b} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		n, err := p.eval.Pass(ctx)
		cancel()
		if counters.ErrorCode(err) != counters.EUNAVAILABLE || n != 0 {
			t.Fatalf("a pass with MySQL down: %d events, %v; want none and unavailable", n, err)
		}
	}
	m.Start(t)
	var wg sync.WaitGroup
	for _, p := range []*alerting{a, b} {
		wg.Go(func() {
			testenv.WaitUntil(t, "a pass after MySQL is back", func() bool { _, err := p.eval.Pass(context.Background()); return err == nil })
		})
	}
	wg.Wait()
	a.pass(t)
	if got, want := kinds(a.alertEvents(t, silence.ID)), []string{"alert.started 0"}; !slices.Equal(got, want) {
		t.Errorf("silence: events %v, want %v", got, want)
	}
	if got, want := kinds(a.alertEvents(t, rate.ID)), []string{"alert.started 2", "alert.ended 0"}; !slices.Equal(got, want) {
		t.Errorf("rate: events %v, want %v", got, want)
	}
}

// An alert adds nothing to the increments of the counters it watches: the
// threshold hooks' recorder, which writes an increment the slower way,
// does not want them.
func TestAnAlertLeavesTheIncrementsOfItsCounterAlone(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock(alertDay)
	a := newAlerting(t, storetest.MigratedDSN(t), clock)
	a.alert(t, webhooks.CreateRequest{Name: "shop/one", Window: "1h", Below: ptr(1)})
	a.alert(t, webhooks.CreateRequest{Prefix: "shop/", Window: "1h", Above: ptr(100)})
	if err := a.rec.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a.rec.Wants("shop/one") || a.rec.Wants("shop/two") {
		t.Fatal("the recorder wants counters only alerts watch")
	}
}

// The relay delivers an alert's event as it delivers a threshold's: signed
// as Standard Webhooks specifies, which the library verifies with the
// hook's secret.
func TestAnAlertsCallIsSignedWithTheHooksSecret(t *testing.T) {
	t.Parallel()
	clock := testenv.NewClock(alertDay)
	a := newAlerting(t, storetest.MigratedDSN(t), clock)
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer srv.Close()
	h, err := a.svc.Create(context.Background(), webhooks.CreateRequest{URL: srv.URL + "/alerts", Name: "shop/quiet", Window: "5m", Below: ptr(1)})
	if err != nil {
		t.Fatal(err)
	}
	clock.Set(alertDay.Add(5 * time.Minute))
	a.pass(t)
	relay := webhooks.NewRelay(a.hooks, webhooks.RelayOptions{Guard: webhooks.NewGuard(true), Poll: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { relay.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	var r *http.Request
	select {
	case r = <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("no call within 30 seconds")
	}
	body := <-bodies
	wh, err := standardwebhooks.NewWebhook(h.Secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(body, r.Header); err != nil {
		t.Fatalf("the call does not verify with the hook's secret: %v", err)
	}
	var e webhooks.AlertEvent
	if err := json.Unmarshal(body, &e); err != nil || e.Type != webhooks.AlertStarted || e.Data.Name != "shop/quiet" || e.Data.Window != "5m" {
		t.Fatalf("body %s: %+v, %v", body, e, err)
	}
}

func ptr(n int64) *int64 { return &n }
