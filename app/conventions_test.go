package app_test

import (
	"testing"

	"countersvc/internal/apptest"
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
