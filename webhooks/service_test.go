package webhooks_test

// The hooks service and the alerts' evaluator over in-memory stores: what
// they check, what they hand the store and when they record an alert's
// transition. storage/ proves the stores (webhooks_test.go,
// webhook_alerts_test.go there), app/ the HTTP side.

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/webhooks"
)

// hookStore is an in-memory webhooks.Store that records its calls.
type hookStore struct {
	hooks   map[int64]*webhooks.Hook
	limit   int // the limit CreateHook was given
	rotated time.Time
	calls   []string
}

func (s *hookStore) CreateHook(_ context.Context, h *webhooks.Hook, limit int) error {
	s.calls = append(s.calls, "CreateHook")
	s.limit = limit
	if len(s.hooks) >= limit {
		return counters.Errorf(counters.EOUTOFRANGE, "too many hooks")
	}
	h.ID = int64(len(s.hooks) + 1)
	s.hooks[h.ID] = h
	return nil
}

func (s *hookStore) Hook(_ context.Context, id int64) (*webhooks.Hook, error) {
	s.calls = append(s.calls, "Hook")
	h, ok := s.hooks[id]
	if !ok {
		return nil, counters.Errorf(counters.ENOTFOUND, "no hook")
	}
	c := *h
	c.Secret = ""
	return &c, nil
}

func (s *hookStore) Hooks(context.Context) ([]webhooks.Hook, error) {
	s.calls = append(s.calls, "Hooks")
	return nil, nil
}

func (s *hookStore) DeleteHook(_ context.Context, id int64) error {
	s.calls = append(s.calls, "DeleteHook")
	return nil
}

func (s *hookStore) EnableHook(_ context.Context, id int64) error {
	s.calls = append(s.calls, "EnableHook")
	if _, ok := s.hooks[id]; !ok {
		return counters.Errorf(counters.ENOTFOUND, "no hook")
	}
	s.hooks[id].DisabledAt = nil
	return nil
}

func (s *hookStore) RotateSecret(_ context.Context, id int64, secret string, until time.Time) (*webhooks.Hook, error) {
	s.calls = append(s.calls, "RotateSecret")
	s.rotated = until
	return &webhooks.Hook{ID: id, Secret: secret, PreviousUntil: &until}, nil
}

func (s *hookStore) Deliveries(_ context.Context, _ int64, limit int) ([]webhooks.Delivery, error) {
	s.calls = append(s.calls, "Deliveries")
	return make([]webhooks.Delivery, limit), nil
}

// The service refuses what Validate and the guard refuse before the store
// sees it, gives each hook a secret of its own, and starts an alert's
// watch at its creation with the steps its quarter hour already holds.
func TestCreateChecksTheRequestAndTheURLThenGivesASecret(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 7, 30, 123456789, time.UTC)
	counts := days{time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC): 5, time.Date(2026, 3, 1, 9, 59, 0, 0, time.UTC): 100}
	tests := []struct {
		name   string
		req    webhooks.CreateRequest
		counts webhooks.Counts
		max    int
		code   string
	}{
		{"a threshold hook", webhooks.CreateRequest{URL: "https://93.184.215.14/hook", Name: "a", Thresholds: []int64{10}}, nil, 0, ""},
		{"an invalid request", webhooks.CreateRequest{URL: "https://93.184.215.14/hook", Name: "a"}, nil, 0, counters.EINVALID},
		{"a loopback URL", webhooks.CreateRequest{URL: "http://127.0.0.1:8080/hook", Name: "a", Thresholds: []int64{10}}, nil, 0, counters.EINVALID},
		{"a private URL", webhooks.CreateRequest{URL: "http://[fd00::1]/hook", Name: "a", Thresholds: []int64{10}}, nil, 0, counters.EINVALID},
		{"an alert", webhooks.CreateRequest{URL: "https://93.184.215.14/hook", Name: "a", Window: "1h", Above: ptr(50)}, counts, 0, ""},
		{"an alert without history", webhooks.CreateRequest{URL: "https://93.184.215.14/hook", Name: "a", Window: "1h", Above: ptr(50)}, nil, 0, counters.EINVALID},
		{"the owner's limit", webhooks.CreateRequest{URL: "https://93.184.215.14/hook", Name: "a", Every: 5}, nil, 1, counters.EOUTOFRANGE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &hookStore{hooks: map[int64]*webhooks.Hook{}}
			if tt.max == 1 {
				st.hooks[99] = &webhooks.Hook{ID: 99}
			}
			svc := webhooks.NewService(st, webhooks.Options{MaxPerKey: tt.max, Counts: tt.counts, Now: func() time.Time { return now }})
			h, err := svc.Create(context.Background(), tt.req)
			if code := counters.ErrorCode(err); code != tt.code {
				t.Fatalf("Create = %v, want code %q", err, tt.code)
			}
			if tt.code == counters.EINVALID && len(st.calls) > 0 {
				t.Fatalf("a refused request reached the store: %v", st.calls)
			}
			if tt.code != "" {
				return
			}
			if st.limit != webhooks.DefaultMaxPerKey {
				t.Errorf("the store was given the limit %d, want the default %d", st.limit, webhooks.DefaultMaxPerKey)
			}
			if !strings.HasPrefix(h.Secret, webhooks.SecretPrefix) || len(h.Secret) < len(webhooks.SecretPrefix)+40 {
				t.Errorf("secret %q, want %s and 32 random bytes", h.Secret, webhooks.SecretPrefix)
			}
			if other, _ := svc.Create(context.Background(), tt.req); other.Secret == h.Secret {
				t.Errorf("two hooks got the same secret %q", h.Secret)
			}
			if a := h.Alert; a != nil {
				// MySQL keeps microseconds; the watch starts at the creation,
				// after the 5 steps of its quarter hour.
				if want := now.Truncate(time.Microsecond); !a.Since.Equal(want) || a.Baseline != 5 {
					t.Errorf("alert since %v baseline %d, want %v, 5", a.Since, a.Baseline, want)
				}
			}
		})
	}
}

// Reads, deletes and enables go to the store as they are; a rotation's
// grace ends a day after now; a page of deliveries is 1 to 1000, 100 when
// no limit is given.
func TestTheServicePassesReadsToTheStoreAndBoundsDeliveries(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 7, 30, 123456789, time.UTC)
	st := &hookStore{hooks: map[int64]*webhooks.Hook{1: {ID: 1, Secret: "whsec_x", DisabledAt: &now}}}
	svc := webhooks.NewService(st, webhooks.Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	tests := []struct {
		name  string
		call  func() (int, error) // how many things it got
		want  int
		code  string
		calls string
	}{
		{"get", func() (int, error) { _, err := svc.Get(ctx, 1); return 1, err }, 1, "", "Hook"},
		{"get an unknown hook", func() (int, error) { _, err := svc.Get(ctx, 2); return 0, err }, 0, counters.ENOTFOUND, "Hook"},
		{"list", func() (int, error) { l, err := svc.List(ctx); return len(l), err }, 0, "", "Hooks"},
		{"delete", func() (int, error) { return 0, svc.Delete(ctx, 1) }, 0, "", "DeleteHook"},
		{"enable: the hook as it is then", func() (int, error) {
			h, err := svc.Enable(ctx, 1)
			if err != nil || h.DisabledAt != nil {
				return 0, err
			}
			return 1, nil
		}, 1, "", "EnableHook Hook"},
		{"enable an unknown hook", func() (int, error) { _, err := svc.Enable(ctx, 2); return 0, err }, 0, counters.ENOTFOUND, "EnableHook"},
		{"rotate", func() (int, error) {
			h, err := svc.Rotate(ctx, 1)
			if err != nil || !strings.HasPrefix(h.Secret, webhooks.SecretPrefix) || !st.rotated.Equal(now.Add(webhooks.RotationGrace).Truncate(time.Microsecond)) {
				return 0, err
			}
			return 1, nil
		}, 1, "", "RotateSecret"},
		{"deliveries without a limit", func() (int, error) { l, err := svc.Deliveries(ctx, 1, 0); return len(l), err }, webhooks.DefaultDeliveries, "", "Deliveries"},
		{"the most deliveries", func() (int, error) { l, err := svc.Deliveries(ctx, 1, 1000); return len(l), err }, 1000, "", "Deliveries"},
		{"too many deliveries", func() (int, error) { l, err := svc.Deliveries(ctx, 1, 1001); return len(l), err }, 0, counters.EINVALID, ""},
		{"a negative limit", func() (int, error) { l, err := svc.Deliveries(ctx, 1, -1); return len(l), err }, 0, counters.EINVALID, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st.calls = nil
			got, err := tt.call()
			if code := counters.ErrorCode(err); code != tt.code || got != tt.want {
				t.Fatalf("got %d, %v; want %d, code %q", got, err, tt.want, tt.code)
			}
			if calls := strings.Join(st.calls, " "); calls != tt.calls {
				t.Fatalf("store calls %q, want %q", calls, tt.calls)
			}
		})
	}
}

// alertStore is an in-memory webhooks.AlertStore: the alerts' hooks, and
// the moves recorded.
type alertStore struct {
	hooks   []webhooks.Hook
	listErr error
	moveErr map[int64]error // by hook
	moves   []move
}

type move struct {
	hook  int64
	holds bool
	body  webhooks.AlertEvent
}

func (s *alertStore) AlertHooks(context.Context) ([]webhooks.Hook, error) {
	return s.hooks, s.listErr
}

func (s *alertStore) MoveAlert(_ context.Context, h *webhooks.Hook, holds bool, _ time.Time, body []byte) (bool, error) {
	if err := s.moveErr[h.ID]; err != nil {
		return false, err
	}
	var e webhooks.AlertEvent
	if err := json.Unmarshal(body, &e); err != nil {
		return false, err
	}
	s.moves = append(s.moves, move{h.ID, holds, e})
	return true, nil
}

// lastChange is days that can also say when the target last changed.
type lastChange struct {
	days
	at time.Time
}

func (l lastChange) LastChange(context.Context, string, string) (time.Time, bool, error) {
	return l.at, !l.at.IsZero(), nil
}

// A pass records each alert whose condition changed, once, with the sum
// it found; a step in the window's first quarter hour that came before the
// window does not count when the store can say so; one alert's failure
// does not stop the others.
func TestAPassRecordsEachAlertsTransitionOnce(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 10, 0, 0, time.UTC)
	since := now.Add(-24 * time.Hour)
	hourly := func(id int64, target string, above bool, n int64, holds bool) webhooks.Hook {
		return webhooks.Hook{ID: id, Target: target, Alert: &webhooks.Alert{Window: time.Hour, Above: above, N: n, Since: since, Holds: holds}}
	}
	// The window is [11:10, 12:10], summed from 11:00.
	steps := days{time.Date(2026, 3, 1, 11, 5, 0, 0, time.UTC): 7, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC): 3}
	unavailable := counters.Errorf(counters.EUNAVAILABLE, "MySQL is away.")
	tests := []struct {
		name    string
		counts  webhooks.Counts
		hooks   []webhooks.Hook
		moveErr map[int64]error
		want    string // hook:holds:sum of each move
		code    string
	}{
		{"above reached", steps, []webhooks.Hook{hourly(1, "a", true, 10, false)}, nil, "1:true:10", ""},
		{"above not reached", steps, []webhooks.Hook{hourly(1, "a", true, 11, false)}, nil, "", ""},
		{"above ends", steps, []webhooks.Hook{hourly(1, "a", true, 11, true)}, nil, "1:false:10", ""},
		{"silence of an unknown counter", steps, []webhooks.Hook{hourly(1, "unknown", false, 1, false)}, nil, "1:true:0", ""},
		{"no transition while it holds", steps, []webhooks.Hook{hourly(1, "a", true, 10, true)}, nil, "", ""},
		{"the first quarter's steps before the window: silence", lastChange{days{time.Date(2026, 3, 1, 11, 5, 0, 0, time.UTC): 7}, time.Date(2026, 3, 1, 11, 5, 0, 0, time.UTC)},
			[]webhooks.Hook{hourly(1, "a", false, 1, false)}, nil, "1:true:0", ""},
		{"a step in the window: no silence", lastChange{days{time.Date(2026, 3, 1, 11, 5, 0, 0, time.UTC): 7}, time.Date(2026, 3, 1, 11, 12, 0, 0, time.UTC)},
			[]webhooks.Hook{hourly(1, "a", false, 1, false)}, nil, "", ""},
		{"one move fails, the next is recorded", steps, []webhooks.Hook{hourly(1, "a", true, 10, false), hourly(2, "a", true, 10, false)},
			map[int64]error{1: unavailable}, "2:true:10", counters.EUNAVAILABLE},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &alertStore{hooks: tt.hooks, moveErr: tt.moveErr}
			woken := 0
			e := &webhooks.Evaluator{Store: st, Counts: tt.counts, Now: func() time.Time { return now }, OnRecord: func() { woken++ }}
			n, err := e.Pass(context.Background())
			if code := counters.ErrorCode(err); code != tt.code {
				t.Fatalf("Pass = %v, want code %q", err, tt.code)
			}
			var got []string
			for _, m := range st.moves {
				got = append(got, strings.Join([]string{strconv.FormatInt(m.hook, 10), strconv.FormatBool(m.holds), strconv.FormatInt(m.body.Data.Sum, 10)}, ":"))
				if wantType := map[bool]string{true: webhooks.AlertStarted, false: webhooks.AlertEnded}[m.holds]; m.body.Type != wantType {
					t.Errorf("move %+v: event %q, want %q", m, m.body.Type, wantType)
				}
			}
			if s := strings.Join(got, " "); s != tt.want || n != len(st.moves) {
				t.Fatalf("moves %q (Pass says %d), want %q", s, n, tt.want)
			}
			if wantWoken := min(n, 1); woken != wantWoken {
				t.Fatalf("relay woken %d times, want %d", woken, wantWoken)
			}
		})
	}
}

func TestAPassThatCannotListTheAlertsReportsIt(t *testing.T) {
	broken := errors.New("connection refused")
	e := &webhooks.Evaluator{Store: &alertStore{listErr: broken}, Counts: days{}, Now: time.Now}
	if n, err := e.Pass(context.Background()); n != 0 || !errors.Is(err, broken) {
		t.Fatalf("Pass = %d, %v; want 0, %v", n, err, broken)
	}
}

// Run evaluates until its context ends, at its Every.
func TestTheEvaluatorRunsEveryPeriodUntilItsContextEnds(t *testing.T) {
	st := &alertStore{listErr: errors.New("down")} // each pass fails at once, and is logged
	passes := make(chan struct{}, 100)
	counted := countingStore{alertStore: st, passes: passes}
	e := &webhooks.Evaluator{Store: counted, Counts: days{}, Now: time.Now, Every: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { e.Run(ctx); close(done) }()
	for i := range 3 {
		select {
		case <-passes:
		case <-time.After(10 * time.Second):
			t.Fatalf("pass %d not within 10 s of a 1 ms period", i+1)
		}
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end within 10 s of its context")
	}
}

type countingStore struct {
	*alertStore
	passes chan struct{}
}

func (c countingStore) AlertHooks(ctx context.Context) ([]webhooks.Hook, error) {
	select {
	case c.passes <- struct{}{}:
	default:
	}
	return c.alertStore.AlertHooks(ctx)
}
