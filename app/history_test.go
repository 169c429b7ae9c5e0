package app_test

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

type seriesBody struct {
	Name, Prefix, Step, TZ string
	From, To               time.Time
	Points                 []struct {
		Start time.Time
		Count int64
	}
	Total int64
}

func getHistory(tb testing.TB, e *apptest.Env, path string) seriesBody {
	tb.Helper()
	r := e.Do(tb, "GET", path, "")
	if r.Status != 200 {
		tb.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	var s seriesBody
	r.Decode(tb, &s)
	return s
}

// Many clients, random positive and negative steps, coalescing on, some
// refused by a bound, some retried with their Idempotency-Key: today's
// count is the sum of the acknowledged steps, and so is the value. The
// race is in the 16 requests in flight at once, which the coalescer joins
// into rounds; 50 each (150 before), five of them keyed, keep every kind
// in those rounds.
func TestTodayCountsExactlyTheAcknowledgedSteps(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, patient) // no 503: the deadline is not what it looks at
	started := time.Now()
	e.Do(t, "PUT", "/v1/counters/sales%2Fstock", `{"value": 0, "min": 0}`)
	const workers, each = 16, 50
	var acked atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 12))
			for i := range each {
				by := rng.Int64N(11) - 4
				path := fmt.Sprintf("/v1/counters/sales%%2Fstock/increment?by=%d", by)
				var headers []string
				if i%10 == 0 {
					headers = []string{fmt.Sprintf("Idempotency-Key: w%d-%d", w, i)}
				}
				for range 1 + len(headers) { // a keyed request is sent twice
					r, err := e.TryDo("POST", path, "", headers...)
					if err != nil {
						t.Error(err)
						return
					}
					switch {
					case r.Status == 200 && r.Header.Get("Idempotent-Replayed") == "":
						acked.Add(by)
					case r.Status == 200 || r.Status == 422: // a replay, or below the bound
					default:
						t.Errorf("status %d: %s", r.Status, r.Body)
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	h := getHistory(t, e, "/v1/counters/sales%2Fstock/history?step=hour&tz=Asia/Kolkata")
	var v struct{ Value int64 }
	e.Do(t, "GET", "/v1/counters/sales%2Fstock", "").Decode(t, &v)
	if h.Total != acked.Load() || v.Value != acked.Load() {
		t.Fatalf("history total %d, value %d, acknowledged steps %d", h.Total, v.Value, acked.Load())
	}
	// The hours the test ran in (two when it crossed one; Kolkata's hours
	// begin at :30 UTC) hold every step, the others none.
	var during int64
	for _, p := range h.Points {
		if !p.Start.Add(time.Hour).Before(started) {
			during += p.Count
		}
	}
	if during != h.Total {
		t.Errorf("the hours since the test began count %d of %d", during, h.Total)
	}
}

// Increments on both sides of local midnight on the days the clocks change
// in Berlin, and in Kolkata (UTC+5:30), land in their own local days.
func TestIncrementsLandInTheirLocalDays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		zone string
		day  string // the local date whose midnight is crossed
	}{
		{"Europe/Berlin", "2025-03-30"}, // 23 hours
		{"Europe/Berlin", "2025-10-26"}, // 25 hours
		{"Europe/Berlin", "2025-10-27"}, // the day after
		{"Asia/Kolkata", "2025-04-17"},
	}
	e := apptest.New(t)
	clock := testenv.NewClock(time.Now())
	e.Store.Now = clock.Now
	for i, tc := range tests {
		t.Run(tc.zone+" "+tc.day, func(t *testing.T) {
			zone, _ := time.LoadLocation(tc.zone)
			d, _ := time.ParseInLocation(time.DateOnly, tc.day, zone)
			name := fmt.Sprintf("days%%2F%d", i)
			steps := []struct {
				at time.Time
				by int
			}{{d.Add(-time.Second), 2}, {d, 3}, {d.AddDate(0, 0, 1).Add(-time.Microsecond), 4}, {d.AddDate(0, 0, 1), 5}}
			for _, s := range steps {
				clock.Set(s.at)
				e.Do(t, "POST", "/v1/counters/"+name+"/increment?by="+fmt.Sprint(s.by), "")
			}
			from := d.AddDate(0, 0, -1).Format(time.DateOnly)
			to := d.AddDate(0, 0, 2).Format(time.DateOnly)
			h := getHistory(t, e, "/v1/counters/"+name+"/history?tz="+url.QueryEscape(tc.zone)+"&from="+from+"&to="+to)
			var got []int64
			for _, p := range h.Points {
				got = append(got, p.Count)
			}
			if fmt.Sprint(got) != "[2 7 5]" || h.Total != 14 {
				t.Errorf("days %s..%s counted %v (total %d), want [2 7 5] (14)", from, to, got, h.Total)
			}
			if !h.Points[1].Start.Equal(d) || h.Points[1].Start.Format(time.RFC3339) != d.Format(time.RFC3339) {
				t.Errorf("the day starts %s, want %s", h.Points[1].Start.Format(time.RFC3339), d.Format(time.RFC3339))
			}
		})
	}
}

// Bad input is 400 with a message that says what is wrong, and touches
// nothing; an unknown counter is 404; a prefix's history sums its counters;
// the public history serves public names only, without a token.
func TestHistoryEndpoints(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = "secret" })
	auth := "Authorization: Bearer secret"
	e.Do(t, "POST", "/v1/counters/hits%2Fa/increment?by=3", "", auth)
	e.Do(t, "POST", "/v1/counters/hits%2Fb/increment?by=4", "", auth)
	tests := []struct {
		name, path  string
		token       bool
		status      int
		wantMessage string
		wantTotal   int64
	}{
		{"a counter", "/v1/counters/hits%2Fa/history", true, 200, "", 3},
		{"a prefix", "/v1/history?prefix=hits/&step=month", true, 200, "", 7},
		{"public", "/v1/hits/hits%2Fb/history?step=hour&tz=Asia/Kathmandu", false, 200, "", 4},
		{"private needs the token", "/v1/counters/hits%2Fa/history", false, 401, "", 0},
		{"public refuses private names", "/v1/hits/shop%2Fa/history", false, 403, "", 0},
		{"unknown counter", "/v1/counters/nothing/history", true, 404, "", 0},
		{"unknown step", "/v1/counters/hits%2Fa/history?step=week", true, 400, "step must be hour, day or month", 0},
		{"unknown zone", "/v1/counters/hits%2Fa/history?tz=Europe/Atlantis", true, 400, "tz must be an IANA time zone", 0},
		{"malformed from", "/v1/counters/hits%2Fa/history?from=2025-02-30", true, 400, "from must be an RFC 3339 time", 0},
		{"reversed", "/v1/counters/hits%2Fa/history?from=2025-03-01&to=2025-02-01", true, 400, "must be before to", 0},
		{"too many points", "/v1/counters/hits%2Fa/history?step=hour&from=2024-01-01&to=2025-01-01", true, 400, "more than 1000 hours", 0},
		{"no prefix", "/v1/history", true, 400, "prefix must not be empty", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var headers []string
			if tc.token {
				headers = []string{auth}
			}
			r := e.Do(t, "GET", tc.path, "", headers...)
			if r.Status != tc.status || !strings.Contains(string(r.Body), tc.wantMessage) {
				t.Fatalf("%d %s, want %d with %q", r.Status, r.Body, tc.status, tc.wantMessage)
			}
			if tc.status == 200 {
				var s seriesBody
				r.Decode(t, &s)
				if s.Total != tc.wantTotal {
					t.Errorf("total %d, want %d", s.Total, tc.wantTotal)
				}
			}
		})
	}
	r := e.Do(t, "GET", "/v1/hits/hits%2Fb/history", "")
	if r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("the public history has no CORS header")
	}
	var v struct{ Value int64 }
	e.Do(t, "GET", "/v1/counters/hits%2Fb", "", auth).Decode(t, &v)
	if v.Value != 4 {
		t.Errorf("reading the public history counted a hit: value %d", v.Value)
	}
}
