package hits_test

import (
	"context"
	"errors"
	"maps"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/visitors"
)

var (
	errRedis = errors.New("redis: i/o timeout")
	firefox  = hits.Visit{Name: "hits/a", Addr: netip.MustParseAddr("198.51.100.1"), UserAgent: "Firefox/140"}
)

// head is v as a HEAD request.
func head(v hits.Visit) hits.Visit { v.Head = true; return v }

// The rules of Count, one case each: what it answers, what it leaves stored,
// and what it asks of the limits; the same whether the hit increments its
// counter itself or the limits start the increment of a hit they admit
// as a first (hits.Chain), which then counts once.
func TestCountRules(t *testing.T) {
	tests := []struct {
		name    string
		stored  map[string]int64 // counters before the visit
		limits  *fakeLimits      // nil: no limits
		incrErr error            // what Increment fails with
		getErr  error            // what Get fails with
		visit   hits.Visit

		want        int64
		wantCode    string // "" for success
		wantStored  int64  // hits/a afterwards; -1 for missing
		wantResult  string // the counters_hits_total result counted, "" for none
		wantFailed  string // the call to the limits whose failure was counted, "" for none
		wantForget  bool
		wantCreated bool
	}{
		{name: "a first hit counts",
			limits: &fakeLimits{}, visit: firefox,
			want: 1, wantStored: 1, wantResult: "counted", wantCreated: true},
		{name: "without limits every hit counts",
			stored: map[string]int64{"hits/a": 7}, visit: firefox,
			want: 8, wantStored: 8, wantResult: "counted"},
		{name: "HEAD reads without counting",
			stored: map[string]int64{"hits/a": 7},
			limits: &fakeLimits{wait: time.Second}, visit: head(firefox),
			want: 7, wantStored: 7},
		{name: "HEAD on a missing counter is 0 and creates nothing",
			limits: &fakeLimits{}, visit: head(firefox),
			want: 0, wantStored: -1},
		{name: "a spent budget is rate limited and counts nothing",
			stored: map[string]int64{"hits/a": 7},
			limits: &fakeLimits{wait: 1200 * time.Millisecond}, visit: firefox,
			wantCode: counters.ERATELIMITED, wantStored: 7, wantResult: "rate_limited"},
		{name: "a repeat answers the current value",
			stored: map[string]int64{"hits/a": 7},
			limits: &fakeLimits{earlier: hits.Pending}, visit: firefox,
			want: 7, wantStored: 7, wantResult: "repeat"},
		{name: "a repeat on a counter deleted within the window counts afresh",
			limits: &fakeLimits{earlier: hits.Created}, visit: firefox,
			want: 1, wantStored: 1, wantResult: "counted"},
		{name: "a repeat of a hit still creating the counter answers 0 and counts nothing",
			limits: &fakeLimits{earlier: hits.Pending}, visit: firefox,
			want: 0, wantStored: -1, wantResult: "repeat"},
		{name: "a repeat whose read fails fails",
			stored: map[string]int64{"hits/a": 7},
			limits: &fakeLimits{earlier: hits.Pending}, getErr: unavailable, visit: firefox,
			wantCode: counters.EUNAVAILABLE, wantStored: 7},
		{name: "the limits fail open",
			stored: map[string]int64{"hits/a": 7},
			limits: &fakeLimits{wait: time.Second, earlier: hits.Pending, err: errRedis}, visit: firefox,
			want: 8, wantStored: 8, wantResult: "counted", wantFailed: "admit"},
		{name: "limits that failed are not asked to forget",
			limits: &fakeLimits{err: errRedis}, incrErr: unavailable, visit: firefox,
			wantCode: counters.EUNAVAILABLE, wantStored: -1, wantFailed: "admit"},
		{name: "limits that check nothing for the client are not asked",
			stored: map[string]int64{"hits/a": 7},
			limits: &fakeLimits{off: true, wait: time.Second, earlier: hits.Pending}, visit: firefox,
			want: 8, wantStored: 8, wantResult: "counted"},
		{name: "a failed created is counted",
			limits: &fakeLimits{createdErr: errRedis}, visit: firefox,
			want: 1, wantStored: 1, wantResult: "counted", wantCreated: true, wantFailed: "created"},
		{name: "a hit that does not create its counter says nothing",
			stored: map[string]int64{"hits/a": 7},
			limits: &fakeLimits{}, visit: firefox,
			want: 8, wantStored: 8, wantResult: "counted"},
		{name: "a failed increment is forgotten, so that the retry counts",
			stored: map[string]int64{"hits/a": 7},
			limits: &fakeLimits{}, incrErr: unavailable, visit: firefox,
			wantCode: counters.EUNAVAILABLE, wantStored: 7, wantForget: true},
		{name: "a failed forget is counted",
			limits: &fakeLimits{forgetErr: errRedis}, incrErr: unavailable, visit: firefox,
			wantCode: counters.EUNAVAILABLE, wantStored: -1, wantFailed: "forget", wantForget: true},
		{name: "a private name is forbidden and asks nothing",
			stored:   map[string]int64{"hits/a": 7},
			limits:   &fakeLimits{wait: time.Second, earlier: hits.Pending},
			visit:    hits.Visit{Name: "books/a", Addr: firefox.Addr},
			wantCode: counters.EPERMISSION, wantStored: 7},
	}
	for _, chain := range []bool{false, true} {
		for _, tc := range tests {
			name := tc.name
			if chain {
				name += ", started by the limits"
			}
			t.Run(name, func(t *testing.T) {
				if tc.limits != nil {
					l := *tc.limits
					tc.limits = &l // each run its own
				}
				store := &fakeCounters{values: maps.Clone(tc.stored), incrErr: tc.incrErr, getErr: tc.getErr}
				reg := prometheus.NewRegistry()
				var limits hits.Limits
				starter := &fakeStarter{store: store}
				o := hits.Options{Registerer: reg}
				switch {
				case tc.limits != nil && chain:
					limits, o.Chain = chainingLimits{tc.limits}, starter
				case tc.limits != nil:
					limits = tc.limits
				}
				svc := hits.New(store, limits, o)

				got, err := svc.Count(context.Background(), tc.visit)
				if code := errorCode(err); code != tc.wantCode {
					t.Fatalf("Count: error %v, want code %q", err, tc.wantCode)
				}
				if got != tc.want {
					t.Errorf("Count = %d, want %d", got, tc.want)
				}
				if v, ok := store.values["hits/a"]; !ok && tc.wantStored != -1 || ok && v != tc.wantStored {
					t.Errorf("stored %d (exists %v), want %d", v, ok, tc.wantStored)
				}
				for _, result := range []string{"counted", "repeat", "rate_limited"} {
					if got, want := metric(t, reg, "counters_hits_total", result), boolFloat(result == tc.wantResult); got != want {
						t.Errorf("counters_hits_total{result=%q} = %v, want %v", result, got, want)
					}
				}
				for _, call := range []string{"admit", "created", "forget"} {
					if got, want := metric(t, reg, "counters_hits_limit_errors_total", call), boolFloat(call == tc.wantFailed); got != want {
						t.Errorf("counters_hits_limit_errors_total{call=%q} = %v, want %v", call, got, want)
					}
				}
				if tc.limits != nil && tc.limits.forgot != tc.wantForget {
					t.Errorf("forgot = %v, want %v", tc.limits.forgot, tc.wantForget)
				}
				if tc.limits != nil && tc.limits.created != tc.wantCreated {
					t.Errorf("created = %v, want %v", tc.limits.created, tc.wantCreated)
				}
				if tc.visit.Head || tc.wantCode == counters.EPERMISSION || tc.limits != nil && tc.limits.off {
					if n := tc.limits.asked(); n != 0 {
						t.Errorf("limits asked %d times, want none", n)
					}
				}
				first := tc.limits != nil && !tc.limits.off && tc.limits.err == nil && tc.limits.wait == 0 &&
					tc.limits.earlier == hits.None && !tc.visit.Head && tc.wantCode != counters.EPERMISSION
				if got, want := starter.started, boolInt(chain && first); got != want {
					t.Errorf("increments the limits started: %d, want %d", got, want)
				}
			})
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The answer to a spent budget says when to retry, in whole seconds
// rounded up, so that a client that waits as told is let in.
func TestRateLimitedSaysWhenToRetry(t *testing.T) {
	tests := []struct {
		wait time.Duration
		secs int
	}{
		{time.Millisecond, 1},
		{time.Second, 1},
		{1200 * time.Millisecond, 2},
		{15 * time.Second, 15},
	}
	for _, tc := range tests {
		svc := hits.New(&fakeCounters{}, &fakeLimits{wait: tc.wait}, hits.Options{})
		_, err := svc.Count(context.Background(), firefox)
		var limited *hits.RateLimitedError
		if !errors.As(err, &limited) {
			t.Fatalf("wait %v: error %v, want a *hits.RateLimitedError", tc.wait, err)
		}
		if got, want := limited.RetryAfter, tc.wait; got != want {
			t.Errorf("RetryAfter = %v, want %v", got, want)
		}
		if got, want := limited.Seconds(), tc.secs; got != want {
			t.Errorf("wait %v: Seconds() = %d, want %d", tc.wait, got, want)
		}
		if got, want := counters.ErrorCode(err), counters.ERATELIMITED; got != want {
			t.Errorf("code %q, want %q", got, want)
		}
	}
}

// The rate limit counts an IPv6 client by its /64; the dedup tells clients
// apart by their whole address and User-Agent. The limits see both only as
// identifiers of the day.
func TestLimitsSeeTheClientsTheyCountBy(t *testing.T) {
	tests := []struct {
		addr, agent string
		rate        string
	}{
		{"198.51.100.1", "Firefox/140", "198.51.100.1"},
		{"2001:db8::1", "Chrome/140", "2001:db8::/64"},
		{"2001:db8:0:1:2:3:4:5", "", "2001:db8:0:1::/64"},
	}
	ctx := context.Background()
	keys := visitors.NewKeys(visitors.LocalSalts(), nil)
	for _, tc := range tests {
		l := &fakeLimits{}
		svc := hits.New(&fakeCounters{}, l, hits.Options{Keys: keys})
		v := hits.Visit{Name: "hits/a", Addr: netip.MustParseAddr(tc.addr), UserAgent: tc.agent}
		if _, err := svc.Count(ctx, v); err != nil {
			t.Fatal(err)
		}
		rate, _ := keys.Key(ctx, tc.rate)
		visitor, _ := keys.ID(ctx, tc.addr, tc.agent)
		seen, _ := keys.Key(ctx, string(visitor[:]), "hits/a")
		if l.hit.Client != rate {
			t.Errorf("%s: rate limited as %q, want the key of %q", tc.addr, l.hit.Client, tc.rate)
		}
		if l.hit.Visitor != seen {
			t.Errorf("%s: deduplicated as %q, want the key of its address and User-Agent on the name", tc.addr, l.hit.Visitor)
		}
		for _, part := range []string{tc.addr, tc.agent} {
			if part != "" && (strings.Contains(l.hit.Client, part) || strings.Contains(l.hit.Visitor, part)) {
				t.Errorf("%s: the limits see %q", tc.addr, part)
			}
		}
	}
}

// An increment that failed because the request ran out of time is still
// forgotten: the forget must not inherit the spent deadline.
func TestForgetOutlivesTheRequestsDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	d := &fakeLimits{}
	store := &fakeCounters{incrErr: unavailable, onIncrement: cancel}
	svc := hits.New(store, d, hits.Options{})
	if _, err := svc.Count(ctx, firefox); errorCode(err) != counters.EUNAVAILABLE {
		t.Fatalf("Count: %v", err)
	}
	if !d.forgot || d.forgetCtxErr != nil {
		t.Fatalf("forgot %v with context error %v, want forgotten under a live context", d.forgot, d.forgetCtxErr)
	}
}

func TestPublicNamesAndRead(t *testing.T) {
	store := &fakeCounters{values: map[string]int64{"pub/a": 5, "books/a": 9}}
	svc := hits.New(store, nil, hits.Options{PublicPrefixes: []string{"pub/", "docs."}})
	tests := []struct {
		name     string
		want     int64
		wantCode string
	}{
		{"pub/a", 5, ""},
		{"pub/missing", 0, counters.ENOTFOUND},
		{"books/a", 0, counters.EPERMISSION},
		{"hits/a", 0, counters.EPERMISSION}, // the default prefix is not added to configured ones
		{"docs.example.com", 0, counters.ENOTFOUND},
	}
	for _, tc := range tests {
		got, err := svc.Read(context.Background(), tc.name)
		if got != tc.want || errorCode(err) != tc.wantCode {
			t.Errorf("Read(%q) = %d, %v; want %d, code %q", tc.name, got, err, tc.want, tc.wantCode)
		}
		if perr := svc.Public(tc.name); (errorCode(perr) == counters.EPERMISSION) != (tc.wantCode == counters.EPERMISSION) {
			t.Errorf("Public(%q) = %v", tc.name, perr)
		}
	}
	if store.gets != 3 {
		t.Errorf("%d reads reached the counters, want 3: private names are refused first", store.gets)
	}
}

func TestValidatePublicPrefix(t *testing.T) {
	for prefix, ok := range map[string]bool{
		"hits/": true, "docs.": true, "a": true,
		"": false, "_board/": false, "bad\x00": false,
	} {
		if err := hits.ValidatePublicPrefix(prefix); (err == nil) != ok {
			t.Errorf("ValidatePublicPrefix(%q) = %v, want ok = %v", prefix, err, ok)
		}
	}
}

var unavailable = counters.Errorf(counters.EUNAVAILABLE, "The database is unavailable.")

func errorCode(err error) string { return counters.ErrorCode(err) }

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// metric is the value of the series of name whose one label is value.
func metric(t *testing.T, reg *prometheus.Registry, name, value string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == value {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// fakeCounters keeps values in a map; Get and Increment fail with getErr
// and incrErr when set.
type fakeCounters struct {
	counters.Service // only Get and Increment are used
	values           map[string]int64
	getErr, incrErr  error
	onIncrement      func()
	gets             int
	labelled         []breakdowns.Labels // the labels of each IncrementWith
}

func (f *fakeCounters) Get(_ context.Context, name string) (*counters.Counter, error) {
	f.gets++
	if f.getErr != nil {
		return nil, f.getErr
	}
	v, ok := f.values[name]
	if !ok {
		return nil, counters.Errorf(counters.ENOTFOUND, "Counter not found.")
	}
	return &counters.Counter{Name: name, Value: v}, nil
}

func (f *fakeCounters) Increment(_ context.Context, name string, by int64) (int64, error) {
	if f.onIncrement != nil {
		f.onIncrement()
	}
	if f.incrErr != nil {
		return 0, f.incrErr
	}
	if f.values == nil {
		f.values = map[string]int64{}
	}
	f.values[name] += by
	return f.values[name], nil
}

func (f *fakeCounters) IncrementWith(ctx context.Context, name string, by int64, extra counters.Extra) (int64, error) {
	var labels breakdowns.Labels
	if l, ok := extra.(breakdowns.Labelled); ok {
		labels = l.Labels()
	}
	f.labelled = append(f.labelled, labels)
	return f.Increment(ctx, name, by)
}

// fakeLimits answers every Admit with wait, earlier and err.
type fakeLimits struct {
	off          bool          // checks nothing (only the image proxies' budget is on)
	wait         time.Duration // the budget is spent
	earlier      hits.Earlier  // every hit's earlier hit
	err          error
	forgetErr    error
	createdErr   error
	calls        int
	hit          hits.Hit // of the last Admit
	forgot       bool
	forgetCtxErr error
	created      bool
}

func (f *fakeLimits) asked() int {
	if f == nil {
		return 0
	}
	return f.calls
}

func (f *fakeLimits) Admit(_ context.Context, h hits.Hit) (time.Duration, hits.Earlier, error) {
	f.calls++
	f.hit = h
	return f.wait, f.earlier, f.err
}

func (f *fakeLimits) Checks(bool) bool { return !f.off }

func (f *fakeLimits) Created(context.Context, hits.Hit) error {
	f.created = true
	return f.createdErr
}

func (f *fakeLimits) Forget(ctx context.Context, _ hits.Hit) error {
	f.forgot, f.forgetCtxErr = true, ctx.Err()
	return f.forgetErr
}
