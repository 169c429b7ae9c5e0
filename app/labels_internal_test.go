package app

import (
	"strings"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The metrics' method label is Fiber's own constant for the method, not a
// view of its reused request buffer, and costs no allocation.
func TestMethodLabelIsAStableStringWithoutAllocations(t *testing.T) {
	tests := []struct {
		name   string
		method string
		want   string
	}{
		{"a defined method", "POST", fiber.MethodPost},
		{"another", "GET", fiber.MethodGet},
		{"a method HTTP does not define", "FOO", "OTHER"},
		{"lower case is another method", "post", "OTHER"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := []byte(tt.method)
			got := methodLabel(string(buf))
			copy(buf, "XXXX") // Fiber reuses its buffer for the next request
			if got != tt.want {
				t.Errorf("methodLabel(%q) = %q, want %q", tt.method, got, tt.want)
			}
		})
	}
	method := string([]byte("POST"))
	if n := testing.AllocsPerRun(100, func() { _ = methodLabel(method) }); n != 0 {
		t.Errorf("methodLabel allocated %v times a request, want 0", n)
	}
}

// Each request counts in the series of its own method, route and status,
// however often each combination comes back, and a combination seen once
// costs no allocation after.
func TestRequestSeriesCountEachCombinationApart(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry())
	requests := []struct {
		method, route string
		status        int
	}{
		{"POST", "/v1/counters/:name/increment", 200},
		{"POST", "/v1/counters/:name/increment", 200},
		{"POST", "/v1/counters/:name/increment", 404},
		{"GET", "/v1/counters/:name/increment", 200},
		{"POST", "/v1/counters/:name", 200},
	}
	for _, r := range requests {
		s := m.of(r.method, r.route, r.status)
		s.requests.Inc()
		s.latency.Observe(0.001)
	}
	want := `
# HELP counters_http_requests_total HTTP requests by method, route and status.
# TYPE counters_http_requests_total counter
counters_http_requests_total{method="GET",route="/v1/counters/:name/increment",status="200"} 1
counters_http_requests_total{method="POST",route="/v1/counters/:name",status="200"} 1
counters_http_requests_total{method="POST",route="/v1/counters/:name/increment",status="200"} 2
counters_http_requests_total{method="POST",route="/v1/counters/:name/increment",status="404"} 1
`
	if err := testutil.CollectAndCompare(m.requests, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.latency); n != 3 {
		t.Errorf("latency series: %d, want 3 (method and route)", n)
	}
	if n := testing.AllocsPerRun(100, func() { m.of("POST", "/v1/counters/:name/increment", 200).requests.Inc() }); n != 0 {
		t.Errorf("a known combination allocated %v times a request, want 0", n)
	}
}
