package app_test

import (
	"testing"
	"time"

	"countersvc/internal/apptest"
	"countersvc/internal/config"
	"countersvc/internal/testenv"
)

// A 503 tells the client when to come back, whichever endpoint gave it:
// client libraries retry on Retry-After, and without it they guess.
func TestEvery503CarriesRetryAfter(t *testing.T) {
	m := testenv.StartMariaDB(t)
	e := apptest.NewWithDSN(t, m.DSN("retryafter"))
	if r := e.Do(t, "PUT", "/v1/counters/r", `{"value": 1}`); r.Status != 201 {
		t.Fatalf("before: %d %s", r.Status, r.Body)
	}
	m.Kill()
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/counters/r", ""},
		{"POST", "/v1/counters/r/increment", ""},
		{"PUT", "/v1/counters/r", `{"value": 2}`},
		{"POST", "/v1/counters/batch", `{"increments": [{"name": "r", "by": 1}]}`},
		{"GET", "/readyz", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.Do(t, tc.method, tc.path, tc.body)
			if r.Status != 503 {
				t.Fatalf("status %d %s, want 503", r.Status, r.Body)
			}
			if got, want := r.Header.Get("Retry-After"), "1"; got != want {
				t.Errorf("Retry-After %q, want %q", got, want)
			}
		})
	}
}

// /readyz checks MySQL and Redis side by side, each under its own deadline:
// a hung MySQL must not make a healthy Redis look down (and the other way
// round), and the answer comes within about one deadline.
func TestReadyzReportsEachDependencyOnItsOwn(t *testing.T) {
	m := testenv.StartMariaDB(t)
	rd := testenv.StartRedis(t)
	e := apptest.NewWithDSN(t, m.DSN("readyz"), func(c *config.Config) { c.RedisURL = rd.URL() })
	for _, tc := range []struct {
		name         string
		freeze, thaw func()
		status       int
		want         string
	}{
		{"both answer", func() {}, func() {}, 200, `{"status":"ok","mysql":"ok","redis":"ok"}`},
		{"MySQL hangs", m.Freeze, m.Thaw, 503, `{"status":"unavailable","mysql":"down","redis":"ok"}`},
		{"Redis hangs", rd.Freeze, rd.Thaw, 200, `{"status":"degraded","mysql":"ok","redis":"down"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.freeze()
			defer tc.thaw()
			start := time.Now()
			r := e.Do(t, "GET", "/readyz", "")
			if r.Status != tc.status || string(r.Body) != tc.want {
				t.Errorf("got %d %s, want %d %s", r.Status, r.Body, tc.status, tc.want)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v; each check has a one-second deadline", took)
			}
		})
	}
}
