package app

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/gofiber/fiber/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersvc/countersvc/counters"
)

// middlewareApp is the application with routes of its own beside the
// service's, and what it logs and counts.
// (app.Test returns once the server is done with the request, so the
// test reads the log after the server wrote it.)
func middlewareApp(t *testing.T, drain *Drain, routes func(a *App)) (*App, *bytes.Buffer, *prometheus.Registry) {
	t.Helper()
	logs := &bytes.Buffer{}
	reg := prometheus.NewRegistry()
	a := New(Options{Log: slog.New(slog.NewJSONHandler(logs, nil)), Registry: reg, Drain: drain, Capabilities: []Capability{PageHits(nil, nil, nil)}})
	routes(a)
	return a, logs, reg
}

// A handler's panic is answered as every other failure: 500 in the
// contract's JSON shape with the request's id, counted under its route,
// and logged with the request id and the stack that raised it; a panic
// whose value is an error is answered as that error. The next request is
// served as usual.
func TestAPanicIsAnsweredLoggedWithItsStackAndCounted(t *testing.T) {
	a, logs, reg := middlewareApp(t, nil, func(a *App) {
		a.Get("/panics/text", func(*fiber.Ctx) error { panic("boom in the handler") })
		a.Get("/panics/error", func(*fiber.Ctx) error {
			panic(counters.Errorf(counters.ENOTFOUND, "no such thing"))
		})
		a.Get("/panics/wrapped", func(*fiber.Ctx) error { panic(errors.New("a plain error")) })
	})
	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/panics/text", 500, counters.EINTERNAL},
		{"/panics/error", 404, counters.ENOTFOUND},
		{"/panics/wrapped", 500, counters.EINTERNAL},
	} {
		t.Run(tc.path, func(t *testing.T) {
			req := httptest.NewRequest("GET", tc.path, nil)
			req.Header.Set(fiber.HeaderXRequestID, "panic-"+strings.ReplaceAll(tc.path, "/", "."))
			res, err := a.Test(req, -1)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			var e errorBody
			if res.StatusCode != tc.status || json.Unmarshal(body, &e) != nil || e.Error.Code != tc.code {
				t.Fatalf("status %d, body %s; want %d with code %s", res.StatusCode, body, tc.status, tc.code)
			}
			id := res.Header.Get(fiber.HeaderXRequestID)
			if id != req.Header.Get(fiber.HeaderXRequestID) {
				t.Fatalf("X-Request-ID %q, want the client's %q", id, req.Header.Get(fiber.HeaderXRequestID))
			}
			var logged bool
			for _, line := range strings.Split(logs.String(), "\n") {
				var l map[string]any
				if json.Unmarshal([]byte(line), &l) != nil || l["msg"] != "panic" || l["request_id"] != id {
					continue
				}
				stack, _ := l["stack"].(string)
				if !strings.Contains(stack, "middleware_internal_test.go") {
					t.Fatalf("the panic's log line has no stack through the handler: %s", line)
				}
				logged = true
			}
			if !logged {
				t.Fatalf("no panic logged for request %s; log:\n%s", id, logs.String())
			}
			counted := testutil.ToFloat64(mustSeries(t, reg, "GET", tc.path, tc.status))
			if counted != 1 {
				t.Fatalf("requests counted under %s %d: %v, want 1", tc.path, tc.status, counted)
			}
		})
	}
	res, err := a.Test(httptest.NewRequest("GET", "/healthz", nil), -1)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("after the panics /healthz: %v %v", res, err)
	}
}

// mustSeries is the requests' counter of a method, route and status.
func mustSeries(t *testing.T, reg *prometheus.Registry, method, route string, status int) prometheus.Collector {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "found"})
	for _, f := range families {
		if f.GetName() != "counters_http_requests_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["method"] == method && labels["route"] == route && labels["status"] == strconv.Itoa(status) {
				c.Add(m.GetCounter().GetValue())
			}
		}
	}
	return c
}

// Once the drain starts every answer asks the client to close its
// connection, the error handler's and unknown routes' too; before, none
// does.
func TestDrainingAnswersCloseTheConnection(t *testing.T) {
	drain := &Drain{}
	a, _, _ := middlewareApp(t, drain, func(a *App) {
		a.Get("/fails", func(*fiber.Ctx) error { return counters.Errorf(counters.EINVALID, "no") })
	})
	for _, draining := range []bool{false, true} {
		if draining {
			drain.Start()
		}
		for _, path := range []string{"/healthz", "/fails", "/no/such/route"} {
			res, err := a.Test(httptest.NewRequest("GET", path, nil), -1)
			if err != nil {
				t.Fatal(err)
			}
			if res.Close != draining {
				t.Fatalf("draining %v, GET %s (%d): Connection: close is %v", draining, path, res.StatusCode, res.Close)
			}
		}
	}
}

// knownMethod knows exactly Fiber's methods, each answered as a constant
// rather than the request's own (reused) bytes, and nothing else (a method
// in another case included).
func TestKnownMethodIsFibersList(t *testing.T) {
	for _, m := range fiber.DefaultMethods {
		sent := strings.Clone(m)
		got, ok := knownMethod(sent)
		if !ok || got != m || unsafe.StringData(got) == unsafe.StringData(sent) {
			t.Errorf("knownMethod(%q) = %q, %v; want a constant of it", m, got, ok)
		}
	}
	for _, m := range []string{"", "get", "FOO", "PROPFIND", "GETX"} {
		if got, ok := knownMethod(m); ok {
			t.Errorf("knownMethod(%q) = %q, true; want unknown", m, got)
		}
	}
}

// A request is counted under the path of the route it matched, one that
// matched none under "unmatched", each as often as it came: the series
// are found by the route itself (metrics.of), and every route of one
// path shares its label.
func TestRequestsAreCountedUnderTheirRoutesPathOrUnmatched(t *testing.T) {
	a, _, reg := middlewareApp(t, nil, func(a *App) {
		a.Get("/things/:id", func(c *fiber.Ctx) error { return c.SendString("thing") })
	})
	for _, r := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/things/1", 200},
		{"GET", "/things/2", 200},
		{"HEAD", "/things/3", 200},
		{"GET", "/no/such/thing", 404},
		{"GET", "/no/such/thing/either", 404},
	} {
		res, err := a.Test(httptest.NewRequest(r.method, r.path, nil), -1)
		if err != nil || res.StatusCode != r.status {
			t.Fatalf("%s %s: %v %v, want %d", r.method, r.path, res, err, r.status)
		}
	}
	for _, want := range []struct {
		method, route string
		status        int
		count         float64
	}{
		{"GET", "/things/:id", 200, 2},
		{"HEAD", "/things/:id", 200, 1},
		{"GET", unmatched, 404, 2},
	} {
		if got := testutil.ToFloat64(mustSeries(t, reg, want.method, want.route, want.status)); got != want.count {
			t.Errorf("%s %s %d counted %v times, want %v", want.method, want.route, want.status, got, want.count)
		}
	}
}
