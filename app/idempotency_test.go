package app_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
)

// A retry with the same key returns the first answer byte for byte and
// changes nothing, for each of the three keyed requests; the same request
// with another key is a new change.
func TestRetryWithSameKeyAppliesOnceAndReturnsFirstAnswer(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	p := own()
	tests := []struct {
		name         string
		method, path string
		body         string
		retryBody    string // the same request written differently
		wantStatus   int
		counter      string
		afterOne     int64 // the counter's value after the change ran once
	}{
		{"increment", "POST", "/v1/counters/" + p + "books%2FRed%20Horse%20Hill/increment", `{"by": 2}`, `{ "by":2 }`, 200, "books%2FRed%20Horse%20Hill", 2},
		{"increment default step", "POST", "/v1/counters/" + p + "sales/increment", ``, `{}`, 200, "sales", 1},
		{"refund", "POST", "/v1/counters/" + p + "refunds/increment", `{"by": -3}`, `{"by":-3}`, 200, "refunds", -3},
		{"put creates", "PUT", "/v1/counters/" + p + "stock", `{"value": 20, "min": 0}`, `{"min": 0, "value": 20}`, 201, "stock", 20},
		{"batch", "POST", "/v1/counters/batch", batchBody(item(p+"b/one", 1), item(p+"b/two", 5), item(p+"b/one", 1)),
			batchBody(item(p+"b/one", 1), item(p+"b/two", 5), item(p+"b/one", 1)), 200, "b%2Fone", 2},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := p + "order-" + strings.Repeat("x", i) + tt.name
			first := env.Do(t, tt.method, tt.path, tt.body, keyHeader(key))
			if first.Status != tt.wantStatus {
				t.Fatalf("first: %d %s, want %d", first.Status, first.Body, tt.wantStatus)
			}
			if got := first.Header.Get("Idempotent-Replayed"); got != "" {
				t.Errorf("first answer has Idempotent-Replayed %q", got)
			}
			for _, body := range []string{tt.body, tt.retryBody} {
				retry := env.Do(t, tt.method, tt.path, body, keyHeader(key))
				if retry.Status != first.Status || !bytes.Equal(retry.Body, first.Body) {
					t.Errorf("retry: %d %s, want %d %s", retry.Status, retry.Body, first.Status, first.Body)
				}
				if got := retry.Header.Get("Idempotent-Replayed"); got != "true" {
					t.Errorf("retry has Idempotent-Replayed %q, want true", got)
				}
				if ct := retry.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("retry Content-Type %q", ct)
				}
			}
			wantValue(t, env, p+tt.counter, tt.afterOne)
			if tt.method == "POST" {
				env.Do(t, tt.method, tt.path, tt.body, keyHeader(key+"-2"))
				if got, _ := valueOf(t, env, p+tt.counter); got == tt.afterOne {
					t.Errorf("a new key did not count again: %s = %d", tt.counter, got)
				}
			}
		})
	}
}

// The same key with another request (body, name, method or route) is 409,
// and the refused request changes nothing.
func TestSameKeyWithDifferentRequestIsConflict(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	p := own()
	first := env.Do(t, "POST", "/v1/counters/"+p+"sales/increment", `{"by": 2}`, keyHeader(p+"k1"))
	wantStatus(t, first, 200, "")
	tests := []struct {
		name         string
		method, path string
		body         string
	}{
		{"other step", "POST", "/v1/counters/" + p + "sales/increment", `{"by": 3}`},
		{"other name", "POST", "/v1/counters/" + p + "other/increment", `{"by": 2}`},
		{"put", "PUT", "/v1/counters/" + p + "sales", `{"value": 2}`},
		{"batch", "POST", "/v1/counters/batch", batchBody(item(p+"sales", 2))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantStatus(t, env.Do(t, tt.method, tt.path, tt.body, keyHeader(p+"k1")), 409, "conflict")
		})
	}
	wantValue(t, env, p+"sales", 2)
	if _, ok := valueOf(t, env, p+"other"); ok {
		t.Error("a refused request created a counter")
	}
	// PUT's If-None-Match is part of the request too.
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+p+"p", `{"value": 1}`, keyHeader(p+"k2")), 201, "")
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+p+"p", `{"value": 1}`, keyHeader(p+"k2"), "If-None-Match: *"), 409, "conflict")
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+p+"p", `{"value": 1, "max": null}`, keyHeader(p+"k2")), 409, "conflict")
}

func TestMalformedIdempotencyKeyIsBadRequest(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	p := own()
	tests := []struct{ name, key string }{
		{"empty", ""},
		{"too long", strings.Repeat("k", 256)},
		{"tab", "a\tb"},
		{"not ASCII", "заказ-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, path := range []string{"/v1/counters/" + p + "sales/increment", "/v1/counters/batch"} {
				body := ""
				if strings.HasSuffix(path, "batch") {
					body = batchBody(item(p+"sales", 1))
				}
				wantStatus(t, env.Do(t, "POST", path, body, keyHeader(tt.key)), 400, "invalid_argument")
			}
			wantStatus(t, env.Do(t, "PUT", "/v1/counters/"+p+"sales", `{"value": 5}`, keyHeader(tt.key)), 400, "invalid_argument")
		})
	}
	if _, ok := valueOf(t, env, p+"sales"); ok {
		t.Error("a request with a malformed key changed a counter")
	}
	for _, key := range []string{p + strings.Repeat("k", 255-len(p)), p + "order 48213 (retry) ~!"} {
		wantStatus(t, env.Do(t, "POST", "/v1/counters/"+p+"sales/increment", "", keyHeader(key)), 200, "")
	}
}

// Concurrent requests with one key: one applies, the others wait for it and
// return its answer.
func TestConcurrentRequestsWithOneKeyApplyOnce(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	tests := []struct {
		name, path, body string
	}{
		{"increment", "/v1/counters/sales/increment", `{"by": 5}`},
		{"batch", "/v1/counters/batch", batchBody(item("orders", 1), item("revenue", 2599))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := parallel(t, 10, func(int) (apptest.Response, error) {
				return env.TryDo("POST", tt.path, tt.body, keyHeader("same-"+tt.name))
			})
			replayed := 0
			for _, r := range rs {
				if r.Status != 200 || !bytes.Equal(r.Body, rs[0].Body) {
					t.Errorf("got %d %s, want 200 %s", r.Status, r.Body, rs[0].Body)
				}
				if r.Header.Get("Idempotent-Replayed") == "true" {
					replayed++
				}
			}
			if replayed != 9 {
				t.Errorf("%d answers replayed, want 9", replayed)
			}
		})
	}
	wantValue(t, env, "sales", 5)
	wantValue(t, env, "orders", 1)
	wantValue(t, env, "revenue", 2599)
}

// A first attempt that the counter refused (a bound, the 64-bit range, a
// create-only set of a counter that exists) is the key's answer: a retry,
// concurrent ones included, is answered the same refusal, status and body
// alike and marked replayed, and changes nothing, also once the refusal's
// reason has gone; a new key is evaluated anew. Bad input records
// nothing: the key stays free.
func TestARefusedFirstAttemptIsTheKeysAnswer(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, patient) // no 503: the deadline is not what it looks at
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/stock", `{"value": 0, "min": 0}`), 201, "")
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/full", `{"value": 9223372036854775807}`), 201, "")
	tests := []struct {
		name, method, path, body, key string
		status                        int
		code                          string
	}{
		{"an increment past a bound", "POST", "/v1/counters/stock/increment", `{"by": -1}`, "sale-7", 422, "out_of_range"},
		{"an increment past the 64-bit range", "POST", "/v1/counters/full/increment", `{"by": 1}`, "sale-8", 422, "out_of_range"},
		{"a batch with an item past a bound", "POST", "/v1/counters/batch", `{"increments": [{"name": "other", "by": 1}, {"name": "stock", "by": -2}]}`, "sale-9", 422, "out_of_range"},
		{"a create-only set of a counter that exists", "PUT", "/v1/counters/stock", `{"value": 5}`, "create-1", 409, "conflict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			headers := []string{keyHeader(tc.key)}
			if tc.method == "PUT" {
				headers = append(headers, "If-None-Match: *")
			}
			first := env.Do(t, tc.method, tc.path, tc.body, headers...)
			wantStatus(t, first, tc.status, tc.code)
			if first.Header.Get("Idempotent-Replayed") != "" {
				t.Errorf("the first answer is marked replayed")
			}
			for _, r := range parallel(t, 10, func(int) (apptest.Response, error) {
				return env.TryDo(tc.method, tc.path, tc.body, headers...)
			}) {
				wantStatus(t, r, tc.status, tc.code)
				if string(r.Body) != string(first.Body) || r.Header.Get("Idempotent-Replayed") != "true" {
					t.Fatalf("a retry answered %s (replayed %q), want the first answer %s, replayed", r.Body, r.Header.Get("Idempotent-Replayed"), first.Body)
				}
			}
		})
	}
	// The reasons go: the stock is replenished, the counter at the top of
	// the range goes down. The retries still get their refusal.
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/stock", `{"value": 3}`), 200, "")
	wantStatus(t, env.Do(t, "PUT", "/v1/counters/full", `{"value": 0}`), 200, "")
	for _, tc := range tests[:3] {
		r := env.Do(t, tc.method, tc.path, tc.body, keyHeader(tc.key))
		wantStatus(t, r, tc.status, tc.code)
	}
	wantValue(t, env, "stock", 3)
	wantValue(t, env, "full", 0)
	if r := env.Do(t, "GET", "/v1/counters/other", ""); r.Status != 404 {
		t.Errorf("the refused batch left its first item: %d %s", r.Status, r.Body)
	}
	// A new key is a new request.
	wantStatus(t, env.Do(t, "POST", "/v1/counters/stock/increment", `{"by": -1}`, keyHeader("sale-10")), 200, "")
	wantValue(t, env, "stock", 2)
	// Bad input is refused before the key is claimed: the key stays free.
	wantStatus(t, env.Do(t, "POST", "/v1/counters/stock/increment", `{"by": "one"}`, keyHeader("sale-11")), 400, "invalid_argument")
	wantStatus(t, env.Do(t, "POST", "/v1/counters/stock/increment", `{"by": -1}`, keyHeader("sale-11")), 200, "")
	wantValue(t, env, "stock", 1)
}

// The answer is in MySQL, committed with the change: a new process on the
// same database (a restart after a crash) still knows it.
func TestRetryAfterRestartReturnsRecordedAnswer(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	first := env.Do(t, "POST", "/v1/counters/sales/increment", `{"by": 4}`, keyHeader("order-1"))
	wantStatus(t, first, 200, "")
	restarted := apptest.NewWithDSN(t, env.DSN)
	retry := restarted.Do(t, "POST", "/v1/counters/sales/increment", `{"by": 4}`, keyHeader("order-1"))
	if retry.Status != 200 || !bytes.Equal(retry.Body, first.Body) {
		t.Errorf("after restart: %d %s, want 200 %s", retry.Status, retry.Body, first.Body)
	}
	wantValue(t, restarted, "sales", 4)
}

// Keys expire after the retention: a repeat then runs anew (expiry is
// checked on read), and the purge deletes expired keys in chunks while
// keeping live ones.
func TestExpiredKeysAreIgnoredAndPurged(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	var clk clock
	env.Store.Now = clk.Now
	incr := func(key string) apptest.Response {
		return env.Do(t, "POST", "/v1/counters/sales/increment", "", keyHeader(key))
	}
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		wantStatus(t, incr(k), 200, "")
	}
	clk.Advance(24*time.Hour + time.Second)
	wantStatus(t, incr("live"), 200, "")
	wantValue(t, env, "sales", 6)

	// An expired key is a new request, also without a purge.
	if r := incr("a"); r.Header.Get("Idempotent-Replayed") != "" || string(r.Body) != `{"name":"sales","value":7}` {
		t.Errorf("expired key a: %d %s, replayed %q", r.Status, r.Body, r.Header.Get("Idempotent-Replayed"))
	}
	if got := countKeys(t, env); got != 6 {
		t.Fatalf("%d keys before the purge, want 6 (a renewed, b-e expired, live)", got)
	}
	n, err := env.Store.PurgeExpiredKeys(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if n != 4 {
		t.Errorf("purged %d keys, want 4 (b to e)", n)
	}
	if got := countKeys(t, env); got != 2 {
		t.Errorf("%d keys after the purge, want 2", got)
	}
	for _, k := range []string{"a", "live"} {
		if r := incr(k); r.Header.Get("Idempotent-Replayed") != "true" {
			t.Errorf("key %s was not kept: %d %s", k, r.Status, r.Body)
		}
	}
	wantStatus(t, incr("b"), 200, "") // purged: counts again
	wantValue(t, env, "sales", 8)
}
