package app_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/webhooks"
)

// call is one request a receiver got.
type call struct {
	at     time.Time
	header http.Header
	body   []byte
}

// receiver is a webhook endpoint on this machine; answer decides each
// reply from the number of calls before it.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	calls  []call
	answer func(n int, w http.ResponseWriter)
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *receiver {
	t.Helper()
	r := &receiver{answer: answer}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.calls)
		r.calls = append(r.calls, call{time.Now(), req.Header.Clone(), body})
		r.mu.Unlock()
		if r.answer == nil {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		r.answer(n, w)
	}))
	t.Cleanup(r.Close)
	return r
}

// waitCalls waits until the receiver got n calls, and returns them.
func (r *receiver) waitCalls(t *testing.T, n int, within time.Duration) []call {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r.mu.Lock()
		got := append([]call(nil), r.calls...)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls within %v, want %d", len(got), within, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// hookCreated is the answer of POST /v1/webhooks.
type hookCreated struct {
	ID         int64      `json:"id"`
	Secret     string     `json:"secret"`
	DisabledAt *time.Time `json:"disabled_at"`
}

func allowPrivate(c *wire.Config) { c.Webhooks.AllowPrivate = true }

func createHook(t *testing.T, e *apptest.Env, body string, headers ...string) hookCreated {
	t.Helper()
	r := e.Do(t, "POST", "/v1/webhooks", body, headers...)
	if r.Status != 201 {
		t.Fatalf("POST /v1/webhooks %s: %d %s", body, r.Status, r.Body)
	}
	var h hookCreated
	r.Decode(t, &h)
	return h
}

// verify checks a call's signature with the Standard Webhooks library,
// not with the service's own code, and returns its event.
func verify(t *testing.T, secret string, c call) map[string]any {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(c.body, c.header); err != nil {
		t.Fatalf("signature of %s: %v (headers %v)", c.body, err, c.header)
	}
	var e map[string]any
	if err := json.Unmarshal(c.body, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// A crossing is delivered signed as Standard Webhooks specifies, and the
// deliveries list it as delivered; the secret is shown only once.
func TestACrossingIsDeliveredSignedAndListed(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, allowPrivate)
	rcv := newReceiver(t, nil)
	h := createHook(t, e, `{"url": "`+rcv.URL+`/in", "name": "stock/widget", "thresholds": [0], "direction": "down"}`)
	if !strings.HasPrefix(h.Secret, "whsec_") {
		t.Fatalf("secret %q", h.Secret)
	}
	e.Do(t, "PUT", "/v1/counters/stock%2Fwidget", `{"value": 2}`)
	e.Do(t, "POST", "/v1/counters/stock%2Fwidget/increment", `{"by": -1}`)
	e.Do(t, "POST", "/v1/counters/stock%2Fwidget/increment", `{"by": -1}`)

	calls := rcv.waitCalls(t, 1, 10*time.Second)
	got := verify(t, h.Secret, calls[0])
	data := got["data"].(map[string]any)
	if got["type"] != "counter.threshold" || data["name"] != "stock/widget" || data["threshold"] != 0.0 ||
		data["direction"] != "down" || data["previous"] != 1.0 || data["value"] != 0.0 {
		t.Fatalf("event %s", calls[0].body)
	}

	var list struct {
		Deliveries []struct {
			ID, Status     string
			Attempts       int
			LastStatusCode *int            `json:"last_status_code"`
			NextAttemptAt  *time.Time      `json:"next_attempt_at"`
			Event          json.RawMessage `json:"event"`
		}
	}
	waitFor(t, 5*time.Second, func() bool {
		e.Do(t, "GET", fmt.Sprintf("/v1/webhooks/%d/deliveries?limit=10", h.ID), "").Decode(t, &list)
		return len(list.Deliveries) == 1 && list.Deliveries[0].Status == "delivered"
	})
	d := list.Deliveries[0]
	if d.ID != calls[0].header.Get("webhook-id") || d.Attempts != 1 || *d.LastStatusCode != 204 || d.NextAttemptAt != nil || string(d.Event) != string(calls[0].body) {
		t.Fatalf("delivery %+v", d)
	}
	for _, path := range []string{"/v1/webhooks", fmt.Sprintf("/v1/webhooks/%d", h.ID)} {
		if r := e.Do(t, "GET", path, ""); r.Status != 200 || strings.Contains(string(r.Body), h.Secret) || strings.Contains(string(r.Body), "secret") {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
	}
}

// 410 disables the hook at once: no more events are recorded, and enable
// brings it back.
func TestGoneDisablesTheHookAndEnableRestoresIt(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, allowPrivate)
	gone := true
	var mu sync.Mutex
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		mu.Lock()
		defer mu.Unlock()
		if gone {
			w.WriteHeader(http.StatusGone)
		}
	})
	h := createHook(t, e, `{"url": "`+rcv.URL+`", "prefix": "gone/", "every": 10}`)
	e.Do(t, "POST", "/v1/counters/gone%2Fa/increment", `{"by": 10}`)
	rcv.waitCalls(t, 1, 10*time.Second)
	var got hookCreated
	waitFor(t, 5*time.Second, func() bool {
		e.Do(t, "GET", fmt.Sprintf("/v1/webhooks/%d", h.ID), "").Decode(t, &got)
		return got.DisabledAt != nil
	})
	// The relay reloads the process's hooks just after the disable commits,
	// and a GET may see the commit first: storage.ReloadEvery bounds the
	// wait for the reload, even when the one after the commit failed.
	time.Sleep(storage.ReloadEvery + 200*time.Millisecond)
	e.Do(t, "POST", "/v1/counters/gone%2Fa/increment", `{"by": 10}`) // recorded nothing: the hook is disabled
	time.Sleep(time.Second)
	if n := len(rcv.waitCalls(t, 1, 0)); n != 1 {
		t.Fatalf("%d calls after the hook was disabled", n)
	}

	mu.Lock()
	gone = false
	mu.Unlock()
	r := e.Do(t, "POST", fmt.Sprintf("/v1/webhooks/%d/enable", h.ID), "")
	r.Decode(t, &got)
	if r.Status != 200 || got.DisabledAt != nil {
		t.Fatalf("enable: %d %s", r.Status, r.Body)
	}
	e.Do(t, "POST", "/v1/counters/gone%2Fa/increment", `{"by": 10}`)
	calls := rcv.waitCalls(t, 2, 10*time.Second)
	if v := verify(t, h.Secret, calls[1])["data"].(map[string]any)["value"]; v != 30.0 {
		t.Fatalf("after enable: value %v", v)
	}
}

// 503 with Retry-After is retried no sooner than it asks, with the same id
// and the same bytes.
func TestRetryAfterIsHonouredAndARetrySendsTheSameBytes(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, allowPrivate)
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 0 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	h := createHook(t, e, `{"url": "`+rcv.URL+`", "name": "retry/x", "thresholds": [1]}`)
	e.Do(t, "POST", "/v1/counters/retry%2Fx/increment", "")
	calls := rcv.waitCalls(t, 2, 15*time.Second)
	if gap := calls[1].at.Sub(calls[0].at); gap < 2*time.Second {
		t.Fatalf("retried after %v, Retry-After said 2s", gap)
	}
	if calls[0].header.Get("webhook-id") != calls[1].header.Get("webhook-id") || string(calls[0].body) != string(calls[1].body) {
		t.Fatalf("the retry differs: %s %s / %s %s", calls[0].header.Get("webhook-id"), calls[0].body, calls[1].header.Get("webhook-id"), calls[1].body)
	}
	verify(t, h.Secret, calls[1])
}

// URLs that reach this machine or private networks are refused at
// creation, and nothing else is accepted but http(s).
func TestPrivateAndOddURLsAreRefusedAtCreation(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	for _, u := range []string{
		"http://127.0.0.1/", "http://localhost:8080/", "http://[::1]/", "http://10.1.2.3/", "http://192.168.0.1/",
		"http://172.16.0.1/", "http://169.254.169.254/latest/meta-data/", "http://100.64.0.1/", "http://0.0.0.0/",
		"http://[fe80::1]/", "http://[::ffff:127.0.0.1]/", "ftp://example.com/", "file:///etc/passwd", "https://user:pw@example.com/",
	} {
		r := e.Do(t, "POST", "/v1/webhooks", `{"url": "`+u+`", "name": "x", "thresholds": [1]}`)
		if r.Status != 400 || r.ErrorCode() != "invalid_argument" {
			t.Errorf("%s: %d %s", u, r.Status, r.Body)
		}
	}
	if r := e.Do(t, "GET", "/v1/webhooks", ""); !strings.Contains(string(r.Body), `"webhooks":[]`) {
		t.Fatalf("refused hooks were kept: %s", r.Body)
	}
}

// A write key manages hooks inside its prefixes only, sees only those, and
// has a limit; a read key none.
func TestHooksAreScopedToTheKeysPrefixesAndLimited(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, allowPrivate, func(c *wire.Config) { c.Webhooks.MaxPerKey = 2 })
	admin := createHook(t, e, `{"url": "http://127.0.0.1:9/", "name": "shopB/x", "thresholds": [1]}`)
	w := createKey(t, e, `{"name": "shop A", "scopes": ["write"], "prefixes": ["shopA/"]}`)
	ro := createKey(t, e, `{"name": "reader", "scopes": ["read"], "prefixes": ["shopA/"]}`)
	url := `"url": "http://127.0.0.1:9/", `
	mine := createHook(t, e, `{`+url+`"name": "shopA/x", "thresholds": [1]}`, bearerOf(w.Secret))
	createHook(t, e, `{`+url+`"prefix": "shopA/sub/", "every": 5}`, bearerOf(w.Secret))

	tests := []struct {
		name, method, path, body string
		key                      keyed
		status                   int
	}{
		{"another prefix's name", "POST", "/v1/webhooks", `{` + url + `"name": "shopB/y", "thresholds": [1]}`, w, 403},
		{"a wider prefix", "POST", "/v1/webhooks", `{` + url + `"prefix": "shop", "thresholds": [1]}`, w, 403},
		{"a read key", "POST", "/v1/webhooks", `{` + url + `"name": "shopA/y", "thresholds": [1]}`, ro, 403},
		{"past the limit", "POST", "/v1/webhooks", `{` + url + `"name": "shopA/z", "thresholds": [1]}`, w, 422},
		{"the admin's hook", "GET", fmt.Sprintf("/v1/webhooks/%d", admin.ID), "", w, 403},
		{"deleting the admin's hook", "DELETE", fmt.Sprintf("/v1/webhooks/%d", admin.ID), "", w, 403},
		{"the admin's deliveries", "GET", fmt.Sprintf("/v1/webhooks/%d/deliveries", admin.ID), "", w, 403},
		{"enabling the admin's hook", "POST", fmt.Sprintf("/v1/webhooks/%d/enable", admin.ID), "", w, 403},
		{"rotating the admin's hook's secret", "POST", fmt.Sprintf("/v1/webhooks/%d/rotate", admin.ID), "", w, 403},
		{"rotating with a read key", "POST", fmt.Sprintf("/v1/webhooks/%d/rotate", mine.ID), "", ro, 403},
		{"rotating a missing hook's secret", "POST", "/v1/webhooks/999999/rotate", "", w, 404},
		{"rotating its own hook's secret", "POST", fmt.Sprintf("/v1/webhooks/%d/rotate", mine.ID), "", w, 200},
		{"listing with a read key", "GET", "/v1/webhooks", "", ro, 403},
		{"its own hook", "GET", fmt.Sprintf("/v1/webhooks/%d", mine.ID), "", w, 200},
		{"its own deliveries", "GET", fmt.Sprintf("/v1/webhooks/%d/deliveries", mine.ID), "", w, 200},
		{"a bad limit", "GET", fmt.Sprintf("/v1/webhooks/%d/deliveries?limit=0", mine.ID), "", w, 400},
		{"a missing hook", "GET", "/v1/webhooks/999999", "", w, 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if r := e.Do(t, tc.method, tc.path, tc.body, bearerOf(tc.key.Secret)); r.Status != tc.status {
				t.Fatalf("%d %s, want %d", r.Status, r.Body, tc.status)
			}
		})
	}
	var list struct{ Webhooks []struct{ ID int64 } }
	e.Do(t, "GET", "/v1/webhooks", "", bearerOf(w.Secret)).Decode(t, &list)
	if len(list.Webhooks) != 2 {
		t.Fatalf("the key lists %d hooks, want its 2", len(list.Webhooks))
	}
	if r := e.Do(t, "DELETE", fmt.Sprintf("/v1/webhooks/%d", mine.ID), "", bearerOf(w.Secret)); r.Status != 204 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	createHook(t, e, `{`+url+`"name": "shopA/z", "thresholds": [1]}`, bearerOf(w.Secret)) // under the limit again
}

func waitFor(t *testing.T, within time.Duration, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v", within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// MariaDB killed while a call is under way (after the claim, before the
// outcome is recorded): nothing is lost and nothing is sent under another
// id. The call is made again once the lease runs out, with the same id and
// bytes, and then recorded as delivered.
func TestMariaDBKilledMidDeliveryLosesNothingAndKeepsTheId(t *testing.T) {
	t.Parallel()
	m := testenv.StartMariaDB(t)
	// A lease of 4 s, not the default's 30 s that the test would wait out:
	// still far longer than a call this receiver answers at once and its
	// record, so the call after the outage is made once the lease runs out,
	// not beside the first.
	e := apptest.NewWithDSN(t, m.DSN("hookoutage"), allowPrivate, func(c *wire.Config) { c.Webhooks.Lease = 4 * time.Second })
	killed := make(chan struct{})
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 0 {
			m.Kill()
			close(killed)
		}
	})
	h := createHook(t, e, `{"url": "`+rcv.URL+`", "name": "outage/x", "every": 5}`)
	if r := e.Do(t, "POST", "/v1/counters/outage%2Fx/increment", `{"by": 5}`); r.Status != 200 {
		t.Fatalf("increment: %d %s", r.Status, r.Body)
	}
	select {
	case <-killed:
	case <-time.After(30 * time.Second):
		t.Fatal("the hook was not called within 30 s of the crossing")
	}
	// The outcome's record fails while MariaDB is down; MariaDB comes back
	// only once it did (the relay logs it), or the record would succeed:
	// a relay starved of CPU may record it seconds after the call.
	for start := time.Now(); !strings.Contains(e.Logs(), "recording an attempt failed"); time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the relay did not log its failed record within 30 s of the outage:\n%s", e.Logs())
		}
	}
	m.Start(t)

	var list struct {
		Deliveries []struct{ ID, Status string }
	}
	waitFor(t, 90*time.Second, func() bool {
		r, err := e.TryDo("GET", fmt.Sprintf("/v1/webhooks/%d/deliveries", h.ID), "")
		if err != nil || r.Status != 200 {
			return false
		}
		r.Decode(t, &list)
		return len(list.Deliveries) == 1 && list.Deliveries[0].Status == "delivered"
	})
	calls := rcv.waitCalls(t, 2, 0)
	for _, c := range calls {
		verify(t, h.Secret, c)
		if c.header.Get("webhook-id") != list.Deliveries[0].ID || string(c.body) != string(calls[0].body) {
			t.Fatalf("a call differs from the first: %s %s / %s %s", c.header.Get("webhook-id"), c.body, calls[0].header.Get("webhook-id"), calls[0].body)
		}
	}
}

// verifies reports whether the Standard Webhooks library verifies the call
// with secret. The calls of a test whose clock was moved a day on carry
// that day's timestamp, which the library's five minutes of tolerance
// would refuse whatever the signature: the signature alone is checked.
func verifies(t *testing.T, secret string, c call) bool {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	return wh.VerifyIgnoringTimestamp(c.body, c.header) == nil
}

// hookRotated is the answer of POST /v1/webhooks/{id}/rotate.
type hookRotated struct {
	ID            int64     `json:"id"`
	Secret        string    `json:"secret"`
	PreviousUntil time.Time `json:"previous_secret_expires_at"`
}

// After a rotation every attempt is signed with the new secret and the one
// it replaced, until the grace ends, then with the new one alone; a retry
// is signed with the secrets of its own attempt, with the same id and
// bytes. The old secret is never shown, nor either logged.
func TestARotatedSecretSignsBesideTheOldOneUntilTheGraceEnds(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, allowPrivate)
	start := time.Now().UTC().Truncate(time.Second)
	clock := testenv.NewClock(start)
	e.Store.Now = clock.Now // the relay's clock too, and the rotation's
	// The receiver holds its first two answers until the test lets each
	// go (after the rotation, after the grace), and asks for a retry.
	release := make(chan struct{}, 2)
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n < 2 {
			<-release
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	old := createHook(t, e, `{"url": "`+rcv.URL+`", "name": "rotate/x", "thresholds": [1]}`)
	e.Do(t, "POST", "/v1/counters/rotate%2Fx/increment", "")
	rcv.waitCalls(t, 1, 10*time.Second) // signed before the rotation

	r := e.Do(t, "POST", fmt.Sprintf("/v1/webhooks/%d/rotate", old.ID), "")
	var rotated hookRotated
	r.Decode(t, &rotated)
	if r.Status != 200 || rotated.ID != old.ID || !strings.HasPrefix(rotated.Secret, "whsec_") || rotated.Secret == old.Secret ||
		!rotated.PreviousUntil.Equal(start.Add(webhooks.RotationGrace)) || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("rotate: %d %s %v", r.Status, r.Body, r.Header)
	}
	if strings.Contains(string(r.Body), old.Secret) {
		t.Fatalf("the rotation's answer shows the old secret: %s", r.Body)
	}
	release <- struct{}{}
	rcv.waitCalls(t, 2, 15*time.Second) // the retry, signed within the grace
	clock.Set(start.Add(webhooks.RotationGrace))
	release <- struct{}{}
	calls := rcv.waitCalls(t, 3, 15*time.Second) // the next retry, signed after it

	tests := []struct {
		name         string
		call         call
		oldOK, newOK bool
		signatures   int
	}{
		{"the attempt before the rotation", calls[0], true, false, 1},
		{"the retry within the grace", calls[1], true, true, 2},
		{"the retry after the grace", calls[2], false, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := verifies(t, old.Secret, tc.call); got != tc.oldOK {
				t.Errorf("verified with the old secret: %v, want %v", got, tc.oldOK)
			}
			if got := verifies(t, rotated.Secret, tc.call); got != tc.newOK {
				t.Errorf("verified with the new secret: %v, want %v", got, tc.newOK)
			}
			if sig := tc.call.header.Get("webhook-signature"); len(strings.Fields(sig)) != tc.signatures {
				t.Errorf("webhook-signature %q, want %d signatures", sig, tc.signatures)
			}
			if tc.call.header.Get("webhook-id") != calls[0].header.Get("webhook-id") || string(tc.call.body) != string(calls[0].body) {
				t.Errorf("the retry differs: %s %s / %s %s", tc.call.header.Get("webhook-id"), tc.call.body, calls[0].header.Get("webhook-id"), calls[0].body)
			}
		})
	}
	// Within the grace the call passes the library's full check, its
	// timestamp's tolerance included, with either secret.
	verify(t, old.Secret, calls[1])
	verify(t, rotated.Secret, calls[1])

	if r := e.Do(t, "GET", fmt.Sprintf("/v1/webhooks/%d", old.ID), ""); strings.Contains(string(r.Body), "secret") {
		t.Fatalf("GET shows a secret after the rotation: %s", r.Body)
	}
	for _, secret := range []string{old.Secret, rotated.Secret} {
		if strings.Contains(e.Logs(), strings.TrimPrefix(secret, "whsec_")) {
			t.Fatal("a secret is in the service's log")
		}
	}
}

// An alert is created, shown and listed with its window and its above or
// below, and without a threshold hook's fields; every malformed alert is
// 400 and creates nothing; a key's prefixes scope alerts as they scope
// threshold hooks.
func TestAlertsAreCreatedAndRefusedAsTheContractSays(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, allowPrivate)
	for _, body := range []string{
		`"window": "4m", "above": 5`,
		`"window": "8d", "above": 5`,
		`"window": "1d12h", "above": 5`,
		`"window": 3600, "above": 5`,
		`"window": "1h", "above": 5, "below": 1`,
		`"window": "1h"`,
		`"above": 5`,
		`"window": "1h", "above": 0`,
		`"window": "1h", "below": -1`,
		`"window": "1h", "above": 1.5`,
		`"window": "1h", "above": 5, "thresholds": [10]`,
		`"window": "1h", "above": 5, "thresholds": []`,
		`"window": "1h", "above": 5, "every": 10`,
		`"window": "1h", "below": 1, "direction": "down"`,
	} {
		r := e.Do(t, "POST", "/v1/webhooks", `{"url": "http://127.0.0.1:9/", "name": "shop/a", `+body+`}`)
		if r.Status != 400 || r.ErrorCode() != "invalid_argument" {
			t.Errorf("%s: %d %s, want 400 invalid_argument", body, r.Status, r.Body)
		}
	}
	if r := e.Do(t, "GET", "/v1/webhooks", ""); !strings.Contains(string(r.Body), `"webhooks":[]`) {
		t.Fatalf("refused alerts were kept: %s", r.Body)
	}

	created := e.Do(t, "POST", "/v1/webhooks", `{"url": "http://127.0.0.1:9/", "prefix": "shop/", "window": "360m", "below": 1}`)
	var h map[string]any
	created.Decode(t, &h)
	if created.Status != 201 || h["window"] != "6h" || h["below"] != 1.0 || h["prefix"] != "shop/" || h["secret"] == nil {
		t.Fatalf("created: %d %s", created.Status, created.Body)
	}
	for _, absent := range []string{"thresholds", "every", "direction", "above", "name"} {
		if _, ok := h[absent]; ok {
			t.Errorf("an alert shows %q: %s", absent, created.Body)
		}
	}
	got := e.Do(t, "GET", fmt.Sprintf("/v1/webhooks/%v", h["id"]), "")
	if want := `"prefix":"shop/","window":"6h","below":1,"created_at"`; got.Status != 200 || !strings.Contains(string(got.Body), want) || strings.Contains(string(got.Body), "secret") {
		t.Fatalf("GET: %d %s, want it to hold %s and no secret", got.Status, got.Body, want)
	}
	rate := createHook(t, e, `{"url": "http://127.0.0.1:9/", "name": "shop/a", "window": "1h", "above": 50}`)
	if r := e.Do(t, "GET", "/v1/webhooks", ""); !strings.Contains(string(r.Body), `"name":"shop/a","window":"1h","above":50,`) {
		t.Fatalf("list: %s", r.Body)
	}

	key := e.Do(t, "POST", "/v1/keys", `{"name": "shop B", "scopes": ["write"], "prefixes": ["shopB/"]}`)
	var k struct{ Secret string }
	key.Decode(t, &k)
	asB := "Authorization: Bearer " + k.Secret
	if r := e.Do(t, "POST", "/v1/webhooks", `{"url": "http://127.0.0.1:9/", "prefix": "shop/", "window": "1h", "below": 1}`, asB); r.Status != 403 {
		t.Errorf("an alert outside the key's prefixes: %d %s, want 403", r.Status, r.Body)
	}
	if r := e.Do(t, "GET", fmt.Sprintf("/v1/webhooks/%d", rate.ID), "", asB); r.Status != 403 {
		t.Errorf("another's alert: %d %s, want 403", r.Status, r.Body)
	}
	createHook(t, e, `{"url": "http://127.0.0.1:9/", "name": "shopB/x", "window": "1d", "below": 1}`, asB)
}

// Every process checks its alerts on its own, twice a minute: a silence
// alert on a counter that never saw a step is called, signed with its
// secret, within a minute of its window passing. The default is checked
// here, and the service under test checks every second (the least
// COUNTERS_WEBHOOK_ALERTS_EVERY takes), so that the test does not wait
// half a minute for the first check.
func TestASilenceAlertIsCalledWithinAMinuteOfItsWindowPassing(t *testing.T) {
	t.Parallel()
	if every := wire.Defaults().Webhooks.AlertsEvery; every > 30*time.Second {
		t.Fatalf("alerts are checked every %v by default, not twice a minute", every)
	}
	e := apptest.New(t, allowPrivate, func(c *wire.Config) { c.Webhooks.AlertsEvery = time.Second })
	created := time.Now().UTC().Add(-6 * time.Minute)
	clock := testenv.NewClock(created)
	e.Store.Now = clock.Now // the alerts' clock, history's and the relay's
	rcv := newReceiver(t, nil)
	hook := createHook(t, e, `{"url": "`+rcv.URL+`", "name": "quiet/page", "window": "5m", "below": 1}`)
	clock.Set(created.Add(6 * time.Minute))
	calls := rcv.waitCalls(t, 1, time.Minute)
	ev := verify(t, hook.Secret, calls[0])
	data, _ := ev["data"].(map[string]any)
	if ev["type"] != "alert.started" || data["name"] != "quiet/page" || data["window"] != "5m" || data["below"] != 1.0 || data["sum"] != 0.0 {
		t.Fatalf("event %v", ev)
	}
}
