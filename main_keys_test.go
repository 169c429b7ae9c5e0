package main_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/storetest"
)

// send makes one request to a process and returns its status and body.
func send(t *testing.T, method, url, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

// newKey creates a key through p as its loopback admin.
func newKey(t *testing.T, p *process, body string) (id int64, secret string) {
	t.Helper()
	status, out := send(t, "POST", p.url+"/v1/keys", body)
	var k struct {
		ID     int64
		Secret string
	}
	if status != 201 || json.Unmarshal([]byte(out), &k) != nil {
		t.Fatalf("POST /v1/keys: %d %s", status, out)
	}
	return k.ID, k.Secret
}

// A key revoked through one process is refused by another that has just
// accepted it, within the contract's second.
func TestRevokedKeyIsRefusedByEveryProcessWithinASecond(t *testing.T) {
	dsn := storetest.MigratedDSN(t) // while the binary builds (TestMain)
	bin := buildBinary(t)
	procs := startProcesses(t, bin, dsn, nil, nil)
	a, b := procs[0], procs[1]
	id, secret := newKey(t, a, `{"name": "shop A", "scopes": ["write"], "prefixes": ["shopA/"]}`)
	incr := func(p *process) int {
		status, _ := send(t, "POST", p.url+"/v1/counters/shopA%2Fsales/increment", "", "Authorization: Bearer "+secret)
		return status
	}
	for _, p := range []*process{a, b} {
		if got := incr(p); got != 200 {
			t.Fatalf("the key before revocation: %d, want 200", got)
		}
	}
	if status, out := send(t, "DELETE", fmt.Sprintf("%s/v1/keys/%d", a.url, id), ""); status != 204 {
		t.Fatalf("DELETE /v1/keys/%d: %d %s", id, status, out)
	}
	if got := incr(a); got != 401 {
		t.Fatalf("the revoking process: %d right after, want 401", got)
	}
	time.Sleep(time.Second)
	if got := incr(b); got != 401 {
		t.Fatalf("the other process: %d a second after the revocation, want 401", got)
	}
}

// A key's secret appears in the answer that created it and nowhere else:
// not in the listing, a refusal, the metrics or the log (at debug level,
// which logs every request). A service without a token says so once at
// start-up.
func TestSecretsAppearOnlyInTheAnswerThatCreatedThem(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	p := startProcess(t, bin, storetest.MigratedDSN(t), "COUNTERS_LOG_LEVEL=debug")
	id, secret := newKey(t, p, `{"name": "shop A", "scopes": ["read"], "prefixes": ["shopA/"]}`)
	auth := "Authorization: Bearer " + secret
	var seen []string
	for _, r := range []struct {
		method, path string
		headers      []string // none: the admin, a loopback client without a token
	}{
		{"GET", "/v1/keys", nil},
		{"GET", fmt.Sprintf("/v1/keys/%d", id), nil},
		{"GET", "/v1/counters/shopA%2Fx", []string{auth}},
		{"POST", "/v1/counters/shopA%2Fx/increment", []string{auth}}, // 403: no write scope
		{"GET", "/v1/counters/other", []string{auth}},                // 403: outside the prefixes
		{"DELETE", fmt.Sprintf("/v1/keys/%d", id), nil},
		{"GET", "/v1/counters/shopA%2Fx", []string{auth}}, // 401: revoked
		{"GET", "/metrics", nil},
	} {
		status, body := send(t, r.method, p.url+r.path, "", r.headers...)
		seen = append(seen, fmt.Sprintf("%s %s: %d %s", r.method, r.path, status, body))
	}
	log, _ := os.ReadFile(p.out.Name())
	seen = append(seen, string(log))
	for _, s := range seen {
		if strings.Contains(s, secret) || strings.Contains(s, secret[len("ck_"):]) || strings.Contains(s, `"secret"`) {
			t.Fatalf("the secret leaked: %s", s)
		}
	}
	metrics := seen[len(seen)-2]
	for _, want := range []string{`counters_auth_failures_total{reason="revoked"} 1`, `counters_auth_failures_total{reason="scope"} 2`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if n := strings.Count(string(log), "COUNTERS_API_TOKEN is unset"); n != 1 {
		t.Errorf("the warning about COUNTERS_API_TOKEN was logged %d times, want once: %s", n, log)
	}
}
