package webhooks_test

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/webhooks"
)

func TestCrossingsFollowTheContractsRule(t *testing.T) {
	up, down := webhooks.Up, webhooks.Down
	x := func(d webhooks.Direction, ts ...int64) []webhooks.Crossing {
		var out []webhooks.Crossing
		for _, t := range ts {
			out = append(out, webhooks.Crossing{Threshold: t, Direction: d})
		}
		return out
	}
	tests := []struct {
		name        string
		hook        webhooks.Hook
		prev, value int64
		want        []webhooks.Crossing
	}{
		{"reaching a threshold crosses it", webhooks.Hook{Thresholds: []int64{1000}, Direction: up}, 999, 1000, x(up, 1000)},
		{"leaving a threshold upwards does not", webhooks.Hook{Thresholds: []int64{1000}, Direction: up}, 1000, 1001, nil},
		{"stock going from 1 to 0 crosses 0 down", webhooks.Hook{Thresholds: []int64{0}, Direction: down}, 1, 0, x(down, 0)},
		{"leaving a threshold downwards does not", webhooks.Hook{Thresholds: []int64{0}, Direction: down}, 0, -1, nil},
		{"an up hook ignores a fall", webhooks.Hook{Thresholds: []int64{5}, Direction: up}, 10, 0, nil},
		{"a down hook ignores a rise", webhooks.Hook{Thresholds: []int64{5}, Direction: down}, 0, 10, nil},
		{"both sees a rise", webhooks.Hook{Thresholds: []int64{5}, Direction: webhooks.Both}, 0, 10, x(up, 5)},
		{"both sees a fall", webhooks.Hook{Thresholds: []int64{5}, Direction: webhooks.Both}, 10, 5, x(down, 5)},
		{"no change crosses nothing", webhooks.Hook{Thresholds: []int64{5}, Direction: webhooks.Both}, 5, 5, nil},
		{"a jump over several thresholds crosses each, in order", webhooks.Hook{Thresholds: []int64{100, 0, 50}, Direction: up}, -1, 100, x(up, 0, 50, 100)},
		{"a fall over several crosses each, from the top", webhooks.Hook{Thresholds: []int64{0, 50, 100}, Direction: down}, 101, 0, x(down, 100, 50, 0)},
		{"every crosses each multiple", webhooks.Hook{Every: 1000, Direction: up}, 999, 3000, x(up, 1000, 2000, 3000)},
		{"every below zero", webhooks.Hook{Every: 10, Direction: up}, -25, -5, x(up, -20, -10)},
		{"every falling through zero", webhooks.Hook{Every: 10, Direction: down}, 15, -10, x(down, 10, 0, -10)},
		{"every from a multiple going down", webhooks.Hook{Every: 10, Direction: down}, 20, 10, x(down, 10)},
		{"a threshold that is also a multiple is one crossing", webhooks.Hook{Thresholds: []int64{2000}, Every: 1000, Direction: up}, 1500, 2500, x(up, 2000)},
		{"every near the top of int64 does not wrap", webhooks.Hook{Every: math.MaxInt64 / 2, Direction: up}, math.MaxInt64 - 10, math.MaxInt64, x(up, math.MaxInt64/2*2)},
		{"every past the last multiple of int64", webhooks.Hook{Every: math.MaxInt64 / 2, Direction: up}, math.MaxInt64 - 1, math.MaxInt64, nil},
		{"every near the bottom of int64 does not wrap", webhooks.Hook{Every: 3, Direction: down}, math.MinInt64 + 2, math.MinInt64, nil},
		{"every at the very bottom", webhooks.Hook{Every: 2, Direction: down}, math.MinInt64 + 1, math.MinInt64, x(down, math.MinInt64)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.hook.Crossings(tc.prev, tc.value); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%d -> %d: got %v, want %v", tc.prev, tc.value, got, tc.want)
			}
		})
	}
}

func TestAHugeJumpSendsAtMostMaxCrossingsFromWhereItStarted(t *testing.T) {
	h := webhooks.Hook{Every: 1, Direction: webhooks.Up}
	got := h.Crossings(0, 1e12)
	if len(got) != webhooks.MaxCrossings || got[0].Threshold != 1 || got[len(got)-1].Threshold != webhooks.MaxCrossings {
		t.Fatalf("got %d crossings from %v to %v", len(got), got[0], got[len(got)-1])
	}
}

func TestCreateRequestsAreValidated(t *testing.T) {
	ok := webhooks.CreateRequest{URL: "https://example.com/hook", Name: "stock/widget", Thresholds: []int64{0}}
	tests := []struct {
		name string
		edit func(r *webhooks.CreateRequest)
	}{
		{"ftp URL", func(r *webhooks.CreateRequest) { r.URL = "ftp://example.com/" }},
		{"relative URL", func(r *webhooks.CreateRequest) { r.URL = "/hook" }},
		{"credentials in the URL", func(r *webhooks.CreateRequest) { r.URL = "https://u:p@example.com/" }},
		{"name and prefix", func(r *webhooks.CreateRequest) { r.Prefix = "stock/" }},
		{"neither name nor prefix", func(r *webhooks.CreateRequest) { r.Name = "" }},
		{"no thresholds nor every", func(r *webhooks.CreateRequest) { r.Thresholds = nil }},
		{"unknown direction", func(r *webhooks.CreateRequest) { r.Direction = "sideways" }},
		{"negative every", func(r *webhooks.CreateRequest) { r.Every = -1 }},
		{"bad name", func(r *webhooks.CreateRequest) { r.Name = "a\x00b" }},
		{"bad prefix", func(r *webhooks.CreateRequest) { r.Name, r.Prefix = "", "a\nb" }},
	}
	if _, err := ok.Validate(); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.edit(&r)
			if _, err := r.Validate(); counters.ErrorCode(err) != counters.EINVALID {
				t.Fatalf("got %v, want invalid_argument", err)
			}
		})
	}
}

func TestTheRetryScheduleStartsWithinTenSecondsAndEndsAfterAboutADay(t *testing.T) {
	first, ok := webhooks.RetryAfter(1)
	if !ok || first <= 0 || first > 10*time.Second {
		t.Fatalf("first retry after %v", first)
	}
	var total time.Duration
	n := 1
	for ; ; n++ {
		d, ok := webhooks.RetryAfter(n)
		if !ok {
			break
		}
		total += d
	}
	if n != webhooks.MaxAttempts || total < 20*time.Hour || total > 36*time.Hour {
		t.Fatalf("%d attempts over %v", n, total)
	}
}

func TestTheEventBodyIsTheContractsShape(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	b := webhooks.Body(counters.Change{Name: "books/Ulysses", Prev: 999, Value: 1063, At: at}, webhooks.Crossing{Threshold: 1000, Direction: webhooks.Up})
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"type": "counter.threshold", "timestamp": "2026-01-02T03:04:05.000006Z", "data": map[string]any{
		"name": "books/Ulysses", "threshold": 1000.0, "direction": "up", "previous": 999.0, "value": 1063.0}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v", got)
	}
}

// Quiet's range holds v, no change within it crosses anything, and it is
// as wide as it may be: one step past either end, from v or to v, crosses.
func TestQuietIsTheWidestRangeAroundAValueThatCrossesNothing(t *testing.T) {
	hooks := []webhooks.Hook{
		{Thresholds: []int64{0, 100}, Direction: webhooks.Up},
		{Thresholds: []int64{0, 100}, Direction: webhooks.Down},
		{Thresholds: []int64{0, 100}, Direction: webhooks.Both},
		{Every: 7, Direction: webhooks.Up},
		{Every: 7, Direction: webhooks.Down},
		{Every: 7, Direction: webhooks.Both},
		{Thresholds: []int64{-20, 3, 50}, Every: 25, Direction: webhooks.Both},
		{Thresholds: []int64{-20, 3, 50}, Every: 25, Direction: webhooks.Up},
		{Thresholds: []int64{math.MinInt64, math.MaxInt64}, Direction: webhooks.Both},
		{Every: math.MaxInt64, Direction: webhooks.Both},
	}
	values := []int64{math.MinInt64, math.MinInt64 + 1, -101, -21, -20, -19, -1, 0, 1, 3, 6, 7, 8, 49, 50, 51, 99, 100, 101, math.MaxInt64 - 1, math.MaxInt64}
	for i := range hooks {
		h := &hooks[i]
		for _, v := range values {
			lo, hi := h.Quiet(v)
			if lo > v || v > hi {
				t.Fatalf("hook %+v: Quiet(%d) = [%d, %d], which does not hold it", *h, v, lo, hi)
			}
			// Every pair of values near the ends and v, within the range.
			inside := []int64{lo, v, hi}
			if lo < math.MaxInt64 {
				inside = append(inside, lo+1)
			}
			if hi > math.MinInt64 {
				inside = append(inside, hi-1)
			}
			for _, a := range inside {
				for _, b := range inside {
					if a < lo || a > hi || b < lo || b > hi {
						continue
					}
					if x := h.Crossings(a, b); len(x) > 0 {
						t.Fatalf("hook %+v: Quiet(%d) = [%d, %d], yet %d -> %d crosses %v", *h, v, lo, hi, a, b, x)
					}
				}
			}
			crossesPast := func(out int64) bool {
				return len(h.Crossings(v, out)) > 0 || len(h.Crossings(out, v)) > 0
			}
			if lo > math.MinInt64 && !crossesPast(lo-1) {
				t.Errorf("hook %+v: Quiet(%d) = [%d, %d] could reach lower: %d <-> %d crosses nothing", *h, v, lo, hi, v, lo-1)
			}
			if hi < math.MaxInt64 && !crossesPast(hi+1) {
				t.Errorf("hook %+v: Quiet(%d) = [%d, %d] could reach higher: %d <-> %d crosses nothing", *h, v, lo, hi, v, hi+1)
			}
		}
	}
}
