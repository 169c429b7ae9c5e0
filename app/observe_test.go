package app_test

import (
	"net/http"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
)

// Fiber hands out the method as a view into a request buffer that the next
// request overwrites; a metric label that kept it would turn a PUT series
// into a second GET series, and the registry then refuses to serve /metrics.
func TestMetricsStayServableAfterRequestsWithDifferentMethods(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	for range 20 {
		env.Do(t, "PUT", "/v1/counters/m", `{"value": 1}`)
		env.Do(t, "GET", "/v1/counters/m", "")
		env.Do(t, "POST", "/v1/counters/m/increment", "")
		env.Do(t, "DELETE", "/v1/counters/m", "")
	}
	if res := env.Do(t, "GET", "/metrics", ""); res.Status != http.StatusOK {
		t.Fatalf("/metrics: %d %s", res.Status, res.Body)
	}
}
