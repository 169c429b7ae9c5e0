package app_test

import (
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
)

type boundsJSON struct {
	Value    int64
	Min, Max *int64
}

func counterBounds(t *testing.T, env *apptest.Env, name string) boundsJSON {
	t.Helper()
	var b boundsJSON
	env.Do(t, "GET", "/v1/counters/"+name, "").Decode(t, &b)
	return b
}

func show(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// PUT sets, keeps and removes bounds; the counter's JSON shows them.
func TestPutManagesBounds(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	stock := own() + "stock"
	tests := []struct {
		name     string
		body     string
		status   int
		code     string
		value    int64
		min, max any // nil: unbounded
	}{
		{"create with both", `{"value": 5, "min": 0, "max": 10}`, 201, "", 5, int64(0), int64(10)},
		{"absent keeps", `{"value": 7}`, 200, "", 7, int64(0), int64(10)},
		{"below min", `{"value": -1}`, 422, "out_of_range", 7, int64(0), int64(10)},
		{"above max", `{"value": 11}`, 422, "out_of_range", 7, int64(0), int64(10)},
		{"outside new bounds", `{"value": 7, "max": 6}`, 422, "out_of_range", 7, int64(0), int64(10)},
		{"min above max", `{"value": 7, "min": 8, "max": 6}`, 400, "invalid_argument", 7, int64(0), int64(10)},
		{"min above stored max", `{"value": 12, "min": 11}`, 400, "invalid_argument", 7, int64(0), int64(10)},
		{"null removes max", `{"value": 100, "max": null}`, 200, "", 100, int64(0), nil},
		{"null removes min", `{"value": -100, "min": null}`, 200, "", -100, nil, nil},
		{"bound not an integer", `{"value": 1, "min": "0"}`, 400, "invalid_argument", -100, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+stock, tt.body), tt.status, tt.code)
			b := counterBounds(t, env, stock)
			if b.Value != tt.value || show(b.Min) != tt.min || show(b.Max) != tt.max {
				t.Errorf("counter is %d [%v, %v], want %d [%v, %v]", b.Value, show(b.Min), show(b.Max), tt.value, tt.min, tt.max)
			}
		})
	}
	r := env.Do(t, "GET", "/v1/counters/"+stock, "")
	if got := string(r.Body); !strings.Contains(got, `"value":-100`) || strings.Contains(got, `"min"`) || strings.Contains(got, `"max"`) {
		t.Errorf("unbounded counter JSON %s", got)
	}
}

// Increments that would leave the bounds are 422 and change nothing; the
// bounds stay exactly reachable.
func TestIncrementOutsideBoundsChangesNothing(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	seats := own() + "seats"
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+seats, `{"value": 0, "min": 0, "max": 3}`), 201, "")
	steps := []struct {
		by     string
		status int
		value  int64
	}{
		{"-1", 422, 0}, {"4", 422, 0}, {"3", 200, 3}, {"1", 422, 3}, {"0", 200, 3}, {"-3", 200, 0},
		{"-9223372036854775808", 422, 0}, {"9223372036854775807", 422, 0},
	}
	for _, s := range steps {
		r := env.Do(t, "POST", "/v1/counters/"+seats+"/increment?by="+s.by, "")
		if r.Status != s.status {
			t.Errorf("by %s: %d %s, want %d", s.by, r.Status, r.Body, s.status)
		}
		wantValue(t, env, seats, s.value)
	}
}

// 50 concurrent sales of one item from a stock of 20 that must not go
// below 0: exactly 20 succeed, each with its own value, the others are 422.
func TestConcurrentSalesStopAtMinimum(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, patient) // no 503: the deadline is not what it looks at
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/stock", `{"value": 20, "min": 0}`), 201, "")
	rs := parallel(t, 50, func(int) (apptest.Response, error) {
		return env.TryDo("POST", "/v1/counters/stock/increment", `{"by": -1}`)
	})
	if got := statuses(rs); got[200] != 20 || got[422] != 30 {
		t.Errorf("statuses %v, want 20 x 200 and 30 x 422", got)
	}
	seen := map[int64]bool{}
	for _, r := range rs {
		if r.Status == 200 {
			var v struct{ Value int64 }
			r.Decode(t, &v)
			if seen[v.Value] || v.Value < 0 || v.Value > 19 {
				t.Errorf("value %d twice or outside [0, 19]", v.Value)
			}
			seen[v.Value] = true
		}
	}
	wantValue(t, env, "stock", 0)
}
