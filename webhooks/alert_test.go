package webhooks_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/webhooks"
)

func TestWindowsFrom5MinutesTo7DaysAreReadAndWrittenBack(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		out  string // FormatWindow of it; "" when refused
	}{
		{"5m", 5 * time.Minute, "5m"},
		{"300s", 5 * time.Minute, "5m"},
		{"1h", time.Hour, "1h"},
		{"1h30m", 90 * time.Minute, "1h30m"},
		{"90m", 90 * time.Minute, "1h30m"},
		{"36h", 36 * time.Hour, "36h"},
		{"48h", 48 * time.Hour, "2d"},
		{"6h0m30s", 6*time.Hour + 30*time.Second, "6h30s"},
		{"1d", 24 * time.Hour, "1d"},
		{"7d", 7 * 24 * time.Hour, "7d"},
		{"168h", 7 * 24 * time.Hour, "7d"},
		{"4m59s", 0, ""},
		{"4m", 0, ""},
		{"0d", 0, ""},
		{"8d", 0, ""},
		{"168h1s", 0, ""},
		{"-1h", 0, ""},
		{"07d", 0, ""},
		{"1.5d", 0, ""},
		{"1d12h", 0, ""},
		{"5m0.5s", 0, ""},
		{"", 0, ""},
		{"hour", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := webhooks.ParseWindow(tc.in)
			if tc.out == "" {
				if counters.ErrorCode(err) != counters.EINVALID {
					t.Fatalf("ParseWindow(%q) = %v, %v; want invalid_argument", tc.in, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseWindow(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
			if out := webhooks.FormatWindow(got); out != tc.out {
				t.Fatalf("FormatWindow(%v) = %q, want %q", got, out, tc.out)
			}
			if again, err := webhooks.ParseWindow(tc.out); err != nil || again != got {
				t.Fatalf("ParseWindow(FormatWindow) = %v, %v; want %v", again, err, got)
			}
		})
	}
}

func ptr(n int64) *int64 { return &n }

func TestAnAlertRequestTakesAWindowAndExactlyOneOfAboveAndBelow(t *testing.T) {
	base := webhooks.CreateRequest{URL: "https://receiver.example/h", Name: "shop/sales"}
	with := func(f func(r *webhooks.CreateRequest)) webhooks.CreateRequest { r := base; f(&r); return r }
	tests := []struct {
		name string
		req  webhooks.CreateRequest
		want *webhooks.Alert // nil: refused
	}{
		{"above", with(func(r *webhooks.CreateRequest) { r.Window, r.Above = "1h", ptr(50) }), &webhooks.Alert{Window: time.Hour, Above: true, N: 50}},
		{"below", with(func(r *webhooks.CreateRequest) { r.Window, r.Below = "6h", ptr(1) }), &webhooks.Alert{Window: 6 * time.Hour, N: 1}},
		{"a prefix", with(func(r *webhooks.CreateRequest) { r.Name, r.Prefix, r.Window, r.Below = "", "shop/", "7d", ptr(3) }), &webhooks.Alert{Window: 7 * 24 * time.Hour, N: 3}},
		{"both above and below", with(func(r *webhooks.CreateRequest) { r.Window, r.Above, r.Below = "1h", ptr(5), ptr(1) }), nil},
		{"neither", with(func(r *webhooks.CreateRequest) { r.Window = "1h" }), nil},
		{"no window", with(func(r *webhooks.CreateRequest) { r.Above = ptr(5) }), nil},
		{"a window under 5m", with(func(r *webhooks.CreateRequest) { r.Window, r.Above = "4m", ptr(5) }), nil},
		{"a window over 7d", with(func(r *webhooks.CreateRequest) { r.Window, r.Above = "8d", ptr(5) }), nil},
		{"above 0", with(func(r *webhooks.CreateRequest) { r.Window, r.Above = "1h", ptr(0) }), nil},
		{"below -1", with(func(r *webhooks.CreateRequest) { r.Window, r.Below = "1h", ptr(-1) }), nil},
		{"with thresholds", with(func(r *webhooks.CreateRequest) { r.Window, r.Above, r.Thresholds = "1h", ptr(5), []int64{10} }), nil},
		{"with empty thresholds", with(func(r *webhooks.CreateRequest) { r.Window, r.Above, r.Thresholds = "1h", ptr(5), []int64{} }), nil},
		{"with every", with(func(r *webhooks.CreateRequest) { r.Window, r.Above, r.Every = "1h", ptr(5), 10 }), nil},
		{"with a direction", with(func(r *webhooks.CreateRequest) { r.Window, r.Below, r.Direction = "1h", ptr(1), webhooks.Down }), nil},
		{"without a target", with(func(r *webhooks.CreateRequest) { r.Name, r.Window, r.Below = "", "1h", ptr(1) }), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := tc.req.Validate()
			if tc.want == nil {
				if counters.ErrorCode(err) != counters.EINVALID {
					t.Fatalf("Validate = %+v, %v; want invalid_argument", h, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.Alert == nil || *h.Alert != *tc.want || len(h.Thresholds) != 0 || h.Every != 0 {
				t.Fatalf("Validate = %+v (alert %+v), want alert %+v without thresholds", h, h.Alert, tc.want)
			}
		})
	}
}

func TestAWindowSumsTheQuarterHoursItTouchesAndNothingBeforeTheHook(t *testing.T) {
	since := time.Date(2026, 3, 1, 10, 7, 0, 0, time.UTC)
	tests := []struct {
		name     string
		window   time.Duration
		now      time.Time
		wantFrom time.Time
		wantFull bool
	}{
		{"at creation", time.Hour, since, since, false},
		{"within the first window", time.Hour, since.Add(30 * time.Minute), since, false},
		{"a whole window later", time.Hour, since.Add(time.Hour), since, true},
		{"a window and a bit later: widened to the quarter hour", time.Hour, since.Add(time.Hour + 10*time.Minute), time.Date(2026, 3, 1, 10, 15, 0, 0, time.UTC), true},
		{"5m in the middle of a quarter hour: that quarter hour", 5 * time.Minute, time.Date(2026, 3, 1, 12, 11, 0, 0, time.UTC), time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), true},
		{"5m at the start of a quarter hour: the one before too", 5 * time.Minute, time.Date(2026, 3, 1, 12, 2, 0, 0, time.UTC), time.Date(2026, 3, 1, 11, 45, 0, 0, time.UTC), true},
		{"on a quarter hour exactly", time.Hour, time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), true},
		{"7 days across months", 7 * 24 * time.Hour, time.Date(2026, 3, 9, 0, 20, 0, 0, time.UTC), time.Date(2026, 3, 2, 0, 15, 0, 0, time.UTC), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &webhooks.Alert{Window: tc.window, Since: since}
			from, full := a.Span(tc.now)
			if !from.Equal(tc.wantFrom) || full != tc.wantFull {
				t.Fatalf("Span(%v) = %v, %v; want %v, %v", tc.now, from, full, tc.wantFrom, tc.wantFull)
			}
		})
	}
}

func TestTheConditionAndItsTransitions(t *testing.T) {
	tests := []struct {
		name  string
		alert webhooks.Alert
		sum   int64
		full  bool
		want  string
	}{
		{"above: the sum reaches N", webhooks.Alert{Above: true, N: 50}, 50, false, webhooks.AlertStarted},
		{"above: under N", webhooks.Alert{Above: true, N: 50}, 49, true, ""},
		{"above: still over", webhooks.Alert{Above: true, N: 50, Holds: true}, 80, true, ""},
		{"above: falls under", webhooks.Alert{Above: true, N: 50, Holds: true}, 49, true, webhooks.AlertEnded},
		{"below: silence once a whole window passed", webhooks.Alert{N: 1}, 0, true, webhooks.AlertStarted},
		{"below: silence before a whole window passed", webhooks.Alert{N: 1}, 0, false, ""},
		{"below: a step", webhooks.Alert{N: 1}, 1, true, ""},
		{"below: a step ends the silence", webhooks.Alert{N: 1, Holds: true}, 1, true, webhooks.AlertEnded},
		{"below: a net negative sum is under", webhooks.Alert{N: 1}, -3, true, webhooks.AlertStarted},
		{"below: still silent", webhooks.Alert{N: 1, Holds: true}, 0, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.alert.Transition(tc.alert.HoldsAt(tc.sum, tc.full)); got != tc.want {
				t.Fatalf("transition = %q, want %q", got, tc.want)
			}
		})
	}
}

// days is a fake history: quarter hours by their start.
type days map[time.Time]int64

func (d days) HistoryDays(_ context.Context, name, prefix string, from, to time.Time) ([]history.UTCDay, error) {
	if name == "unknown" {
		return nil, counters.Errorf(counters.ENOTFOUND, "Counter not found.")
	}
	var out []history.UTCDay
	for day := from; day.Before(to); day = day.AddDate(0, 0, 1) {
		u := history.UTCDay{Date: day}
		for at, n := range d {
			if dd, q := history.QuarterOf(at); dd.Equal(day) {
				u.Quarters[q] += n
			}
		}
		out = append(out, u)
	}
	return out, nil
}

func TestAQuarterSumTakesTheQuarterHoursFromTheOneOfFromToTheOneOfTo(t *testing.T) {
	at := func(h, m int) time.Time { return time.Date(2026, 3, 1, h, m, 0, 0, time.UTC) }
	h := days{at(9, 50): 1, at(10, 0): 2, at(10, 14): 4, at(10, 15): 8, at(23, 59): 16, at(0, 0).AddDate(0, 0, 1): 32}
	tests := []struct {
		name     string
		target   string
		from, to time.Time
		want     int64
	}{
		{"one quarter hour", "x", at(10, 5), at(10, 10), 6},
		{"two", "x", at(10, 14), at(10, 15), 14},
		{"across midnight", "x", at(23, 50), at(0, 10).AddDate(0, 0, 1), 48},
		{"all", "x", at(0, 0), at(23, 59).AddDate(0, 0, 1), 63},
		{"an unknown counter", "unknown", at(0, 0), at(23, 59), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := webhooks.QuarterSum(context.Background(), h, tc.target, false, tc.from, tc.to)
			if err != nil || got != tc.want {
				t.Fatalf("QuarterSum = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}

func TestAnAlertsEventSaysWhatWasSummedOverWhichPeriod(t *testing.T) {
	from, to := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 15, 1, 0, 0, time.UTC)
	h := &webhooks.Hook{Target: "shop/", IsPrefix: true, Alert: &webhooks.Alert{Window: 6 * time.Hour, N: 1}}
	got := string(webhooks.AlertBody(h, webhooks.AlertStarted, 0, from, to))
	want := `{"type":"alert.started","timestamp":"2026-03-01T15:01:00Z","data":{"prefix":"shop/","window":"6h","below":1,"sum":0,` +
		`"from":"2026-03-01T09:00:00Z","to":"2026-03-01T15:01:00Z"}}`
	if got != want {
		t.Fatalf("body\n%s\nwant\n%s", got, want)
	}
	var e webhooks.AlertEvent
	if err := json.Unmarshal([]byte(got), &e); err != nil || e.Data.Below == nil || e.Data.Above != nil {
		t.Fatalf("%+v, %v", e, err)
	}
}
