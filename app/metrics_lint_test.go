package app_test

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
)

// /metrics passes `promtool check metrics`: promlint is the linter promtool
// runs on what it reads, here run on the service's real answer after
// traffic has made every family of ours show its series (requests, the
// coalescer, the cache, the page-hit limits, errors).
func TestMetricsPassPromtoolCheck(t *testing.T) {
	t.Parallel()
	rd := testenv.StartRedis(t)
	e := apptest.NewWithCache(t, rd.URL())
	for _, x := range []struct{ method, path, body string }{
		{"PUT", "/v1/counters/a", `{"value": 1}`},
		{"POST", "/v1/counters/a/increment", ""},
		{"GET", "/v1/counters/a", ""},
		{"GET", "/v1/counters?prefix=a", ""},
		{"POST", "/v1/counters/batch", `{"increments": [{"name": "a", "by": 1}]}`},
		{"GET", "/v1/hits/hits%2Fa", ""},
		{"GET", "/v1/hits/hits%2Fa", ""},
		{"GET", "/v1/counters/a/history", ""},
		{"GET", "/v1/counters/missing", ""},
		{"PATCH", "/v1/counters/a", ""},
		{"FOO", "/v1/counters/a", ""},
	} {
		e.Do(t, x.method, x.path, x.body)
	}
	r := e.Do(t, "GET", "/metrics", "")
	if r.Status != 200 {
		t.Fatalf("/metrics: %d", r.Status)
	}
	problems, err := promlint.New(bytes.NewReader(r.Body)).Lint()
	if err != nil {
		t.Fatalf("/metrics does not parse as the text format: %v", err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
	if !bytes.Contains(r.Body, []byte("counters_http_requests_total")) {
		t.Error("/metrics has none of the service's own metrics")
	}
}
