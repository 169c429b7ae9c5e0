package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// The bodies that are not JSON are checked as text against their schema
// (type: string): their media type is what the spec holds them to.
func init() {
	for _, mime := range []string{"application/x-ndjson", "application/jsonl", "application/x-www-form-urlencoded", "application/javascript", "image/svg+xml", "text/html", "text/event-stream"} {
		openapi3filter.RegisterBodyDecoder(mime, openapi3filter.PlainBodyDecoder)
	}
}

// spec is openapi.yaml as a client library reads it (kin-openapi), with a
// router that finds each request's operation, and the record of which
// operations answered with which statuses.
type spec struct {
	doc    *openapi3.T
	router routers.Router

	mu   sync.Mutex
	seen map[string]map[int]bool // operationId -> statuses answered
}

// loadSpec gives a test the document and its router, which the tests
// share (they read them and change nothing), and a record of its own.
func loadSpec(t *testing.T) *spec {
	t.Helper()
	loaded, err := theSpec()
	if err != nil {
		t.Fatal(err)
	}
	return &spec{doc: loaded.doc, router: loaded.router, seen: map[string]map[int]bool{}}
}

// theSpec is openapi.yaml loaded, validated and routed once a test binary:
// about 2 s under the race detector, which five tests paid each.
var theSpec = sync.OnceValues(func() (*spec, error) {
	doc, err := openapi3.NewLoader().LoadFromFile("../openapi.yaml")
	if err != nil {
		return nil, fmt.Errorf("loading openapi.yaml: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapi.yaml is not a valid OpenAPI document: %w", err)
	}
	doc.Servers = nil // the test's services listen on ports of their own
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, err
	}
	return &spec{doc: doc, router: router}, nil
})

// exchange is one request and the status it must be answered with.
type exchange struct {
	method, path, body string
	headers            []string
	announce           int // > 0: send the headers alone, announcing a body of this many bytes
	status             int
	// unwritable: why openapi.yaml's schemas cannot refuse this 400 (by
	// default they must: the refusals are written as schemas where they
	// can be, so that a client validating its requests learns them).
	unwritable string
}

func (x exchange) String() string {
	s := fmt.Sprintf("%s %s %d", x.method, x.path, x.status)
	if x.body != "" {
		s += " " + x.body
	}
	return s
}

// do sends x to e and holds the answer to x.status and to the spec.
func (s *spec) do(t *testing.T, e *apptest.Env, x exchange) apptest.Response {
	t.Helper()
	var r apptest.Response
	switch {
	case x.announce > 0:
		r = announceBodyTo(t, e, x.method, x.path, x.announce, x.headers...)
	case strings.Contains(x.path, "/events"):
		r = streamOnce(t, e, x.method, x.path, x.headers...)
	default:
		r = e.Do(t, x.method, x.path, x.body, x.headers...)
	}
	if r.Status != x.status {
		t.Errorf("%s: answered %d %s", x, r.Status, r.Body)
	}
	s.check(t, x, r)
	return r
}

// check validates an answer against the operation the spec has for its
// request: the status is one the operation lists, the headers it declares
// have their schemas (required ones are there), and the body is of a
// documented media type and matches its schema.
func (s *spec) check(t *testing.T, x exchange, r apptest.Response) {
	t.Helper()
	if r.Header.Get("X-Request-ID") == "" {
		t.Errorf("%s: no X-Request-ID", x)
	}
	req := httptest.NewRequest(x.method, "http://service"+x.path, nil)
	for _, h := range x.headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	route, params, err := s.router.FindRoute(req)
	if err != nil {
		t.Errorf("%s: openapi.yaml has no operation for it: %v", x, err)
		return
	}
	op := route.Operation.OperationID
	s.mu.Lock()
	if s.seen[op] == nil {
		s.seen[op] = map[int]bool{}
	}
	s.seen[op][r.Status] = true
	s.mu.Unlock()

	s.checkRequest(t, x, route, params)
	if route.Operation.Responses.Status(r.Status) == nil {
		t.Errorf("%s: operation %s does not list status %d (answered %s)", x, op, r.Status, r.Body)
		return
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route}
	switch {
	case x.method == http.MethodHead:
		// kin-openapi skips HEAD answers whole; their status and headers
		// are checked as a GET's would be, against the HEAD operation.
		get := req.Clone(req.Context())
		get.Method = http.MethodGet
		in.Request = get
		opts.ExcludeResponseBody = true
		if len(r.Body) != 0 {
			t.Errorf("%s: HEAD answered with a body", x)
		}
		content := route.Operation.Responses.Status(r.Status).Value.Content
		if ct := r.Header.Get("Content-Type"); len(content) > 0 && content.Get(ct) == nil {
			t.Errorf("%s: Content-Type %q is not one operation %s lists", x, ct, op)
		}
	case r.Status == http.StatusNotModified:
		// Skipped by kin-openapi too: no body, and the ETag must be there.
		if r.Header.Get("ETag") == "" || len(r.Body) != 0 {
			t.Errorf("%s: 304 needs an ETag and no body", x)
		}
		return
	}
	in.Options = opts
	res := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: r.Status, Header: r.Header, Options: opts,
	}
	res.SetBodyBytes(r.Body)
	if err := openapi3filter.ValidateResponse(context.Background(), res); err != nil {
		t.Errorf("%s: the answer does not match operation %s: %v\nbody: %.300s", x, op, err, r.Body)
	}
	if r.Header.Get("Content-Type") == "application/x-ndjson" && x.method == http.MethodGet {
		s.checkLines(t, x, r.Body)
	}
}

// checkLines holds each line of a JSON-lines answer (the export) to the
// schema the spec gives its lines: a Counter, or an Error that ends it.
func (s *spec) checkLines(t *testing.T, x exchange, body []byte) {
	t.Helper()
	counter := s.doc.Components.Schemas["Counter"].Value
	errSchema := s.doc.Components.Schemas["Error"].Value
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	for i, line := range lines {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Errorf("%s: line %d is not JSON: %q", x, i+1, line)
			continue
		}
		schema := counter
		if i == len(lines)-1 && strings.HasPrefix(line, `{"error"`) {
			schema = errSchema
		}
		if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
			t.Errorf("%s: line %d does not match its schema: %v", x, i+1, err)
		}
	}
}

// checkRequest holds the spec's request schemas to what the service
// does: a request it accepts passes them, and one it refuses as invalid
// (400) fails them, unless x says why no schema can refuse it.
func (s *spec) checkRequest(t *testing.T, x exchange, route *routers.Route, params map[string]string) {
	t.Helper()
	if x.announce > 0 {
		return
	}
	var err error
	req := httptest.NewRequest(x.method, "http://service"+x.path, strings.NewReader(x.body))
	if x.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range x.headers {
		k, v, _ := strings.Cut(h, ":")
		req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	// The router leaves path parameters percent-encoded; their schemas
	// describe the values (a counter's name, not its URL form).
	values := map[string]string{}
	for k, v := range params {
		if values[k], err = url.PathUnescape(v); err != nil {
			t.Errorf("%s: %v", x, err)
		}
	}
	err = openapi3filter.ValidateRequest(context.Background(), &openapi3filter.RequestValidationInput{
		Request: req, PathParams: values, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
	})
	switch {
	case (x.status < 300 || x.status == http.StatusNotModified) && err != nil:
		t.Errorf("%s: the service accepts it, openapi.yaml refuses it: %v", x, err)
	case x.status == http.StatusBadRequest && x.unwritable == "" && err == nil:
		t.Errorf("%s: the service refuses it, openapi.yaml's schemas accept it", x)
	}
}

// operations lists every operationId of the spec.
func (s *spec) operations() map[string]*openapi3.Operation {
	ops := map[string]*openapi3.Operation{}
	for _, item := range s.doc.Paths.Map() {
		for _, op := range item.Operations() {
			ops[op.OperationID] = op
		}
	}
	return ops
}

// answerNotProvoked lists the documented answers the conformance test does
// not provoke, with why. Everything else openapi.yaml lists is answered at
// least once.
var answerNotProvoked = map[string]string{
	"500":                        "a bug; nothing a request can cause on purpose",
	"counterHistory 422":         "a period's count past the int64 range: it needs 2^63 of increments",
	"prefixHistory 422":          "as counterHistory",
	"hitHistory 422":             "as counterHistory",
	"counterHistoryHead 422":     "as counterHistory",
	"prefixHistoryHead 422":      "as counterHistory",
	"hitHistoryHead 422":         "as counterHistory",
	"counterBreakdown 422":       "a count past the int64 range: it needs 2^63 of increments",
	"counterBreakdownHead 422":   "as counterBreakdown",
	"prefixBreakdown 422":        "as counterBreakdown",
	"prefixBreakdownHead 422":    "as counterBreakdown",
	"hitBreakdown 422":           "as counterBreakdown",
	"hitBreakdownHead 422":       "as counterBreakdown",
	"hitPrefixBreakdown 422":     "as counterBreakdown",
	"hitPrefixBreakdownHead 422": "as counterBreakdown",
}

// Every answer the service gives matches openapi.yaml, as a client library
// validating against it (kin-openapi) sees it: each operation is driven
// through its success and its documented refusals against the real
// service (MariaDB and Redis), then again with MySQL down, and every
// operation and every documented answer must have been seen.
func TestEveryAnswerMatchesOpenAPI(t *testing.T) {
	t.Parallel()
	s := loadSpec(t)
	const token = "conformance-admin-token"
	admin := "Authorization: Bearer " + token
	withToken := func(c *wire.Config) { c.Keys.AdminToken = token }
	rd := testenv.StartRedis(t)
	// Redis's 5 s, as hitLimits gives it: the default limits' answers
	// (a repeat hit, counted or not) must not depend on whether Redis
	// answered within 100 ms beside the parallel tests; and patient
	// MySQL: a 503 of a slow commit beside them is not a documented one.
	e := apptest.NewWithCache(t, rd.URL(), withToken, patient, func(c *wire.Config) { c.Cache.Timeout = 5 * time.Second })

	// The state the table reads and refuses to change.
	for _, x := range []exchange{
		{method: "PUT", path: "/v1/counters/a", body: `{"value": 1}`, status: 201},
		{method: "PUT", path: "/v1/counters/gone", body: `{"value": 1}`, status: 201},
		{method: "PUT", path: "/v1/counters/stock", body: `{"value": 0, "min": 0}`, status: 201},
		{method: "PUT", path: "/v1/counters/hits%2Fpage", body: `{"value": 5}`, status: 201},
		{method: "POST", path: "/v1/counters/a/increment", headers: []string{"Idempotency-Key: once"}, status: 200},
	} {
		s.do(t, e, withHeader(x, admin))
	}
	board := struct {
		ID int64 `json:"id"`
	}{}
	s.do(t, e, exchange{method: "POST", path: "/v1/boards", body: `{"company_id": 1, "slug": "ninja", "title": "Ninja"}`,
		headers: []string{admin}, status: 201}).Decode(t, &board)
	b := "/v1/boards/" + strconv.FormatInt(board.ID, 10)
	for range 3 {
		s.do(t, e, exchange{method: "POST", path: b + "/tickets", body: `{"title": "A ticket"}`, headers: []string{admin}, status: 201})
	}
	var reader, spare keyed
	s.do(t, e, exchange{method: "POST", path: "/v1/keys", body: `{"name": "reader", "scopes": ["read"], "prefixes": ["shopA/"]}`,
		headers: []string{admin}, status: 201}).Decode(t, &reader)
	s.do(t, e, exchange{method: "POST", path: "/v1/keys", body: `{"name": "spare", "scopes": ["write"], "expires_at": null}`,
		headers: []string{admin}, status: 201}).Decode(t, &spare)
	asReader := bearerOf(reader.Secret)
	var writer keyed // reads nothing: GET /v1/me is 403
	s.do(t, e, exchange{method: "POST", path: "/v1/keys", body: `{"name": "till", "scopes": ["write"], "prefixes": ["shopA/"]}`,
		headers: []string{admin}, status: 201}).Decode(t, &writer)
	// Hooks on a public address given as an IP, so that creation needs no
	// DNS; its one event stays pending (only loopback is reachable here).
	var hook, spareHook struct {
		ID int64 `json:"id"`
	}
	const hookURL = `"url": "https://93.184.215.14/hook", `
	s.do(t, e, exchange{method: "POST", path: "/v1/webhooks", body: `{` + hookURL + `"prefix": "wh/", "every": 10}`,
		headers: []string{admin}, status: 201}).Decode(t, &hook)
	s.do(t, e, exchange{method: "POST", path: "/v1/webhooks", body: `{` + hookURL + `"name": "wh/spare", "thresholds": [-5, 5], "direction": "both"}`,
		headers: []string{admin}, status: 201}).Decode(t, &spareHook)
	s.do(t, e, exchange{method: "POST", path: "/v1/counters/wh%2Fx/increment", body: `{"by": 10}`, headers: []string{admin}, status: 200})
	var note struct {
		ID int64 `json:"id"`
	}
	s.do(t, e, exchange{method: "POST", path: "/v1/annotations", body: `{"name": "a", "text": "To be deleted"}`,
		headers: []string{admin}, status: 201}).Decode(t, &note)
	n := "/v1/annotations/" + strconv.FormatInt(note.ID, 10)
	h := "/v1/webhooks/" + strconv.FormatInt(hook.ID, 10)
	spareH := "/v1/webhooks/" + strconv.FormatInt(spareHook.ID, 10)
	const ndjson = "Content-Type: application/x-ndjson"
	const textPlain = "Content-Type: text/plain"
	spareKey := "/v1/keys/" + strconv.FormatInt(spare.ID, 10)

	// One request per operation that succeeds: replayed without a token
	// (401), and against a service whose MySQL is down (503).
	succeeds := []exchange{
		{method: "GET", path: "/healthz", status: 200},
		{method: "GET", path: "/readyz", status: 200},
		{method: "GET", path: "/metrics", status: 200},
		{method: "GET", path: "/dashboard", status: 200},
		{method: "GET", path: "/v1/snippet.js", status: 200},
		{method: "POST", path: "/v1/counters/a/increment", status: 200},
		{method: "POST", path: "/v1/counters/a/increment?by=-2", status: 200},
		{method: "POST", path: "/v1/counters/a/increment", body: `{"by": 3}`, status: 200},
		{method: "GET", path: "/v1/counters/a", status: 200},
		{method: "PUT", path: "/v1/counters/b", body: `{"value": 7, "min": 0, "max": null}`, status: 201},
		{method: "PUT", path: "/v1/counters/b", body: `{"value": 8}`, status: 200},
		{method: "DELETE", path: "/v1/counters/gone", status: 204},
		{method: "GET", path: "/v1/counters?prefix=&limit=2", status: 200},
		{method: "POST", path: "/v1/counters/reset", body: `{"prefix": "b", "value": 0}`, status: 200},
		{method: "POST", path: "/v1/counters/reset", body: `{"all": true}`, status: 200},
		{method: "POST", path: "/v1/counters/batch", body: batchBody(item("a", 1), item("c", -1)), status: 200},
		{method: "GET", path: "/v1/counters/a/history?step=hour&tz=Europe/Berlin", status: 200},
		{method: "GET", path: "/v1/counters/a/history?from=2025-04-01T09:00:00.5%2B02:00&to=2025-04-02", status: 200},
		{method: "GET", path: "/v1/history?prefix=a&step=month&from=2025-01&to=2025-07", status: 200},
		{method: "GET", path: "/v1/export?prefix=a", status: 200},
		{method: "POST", path: "/v1/import?mode=overwrite", body: "{\"name\": \"imp/a\", \"value\": 3}\n", headers: []string{ndjson}, status: 200},
		{method: "POST", path: "/v1/import", body: "{\"name\": \"imp/b\", \"value\": 1}\n", headers: []string{ndjson, "Idempotency-Key: import-once"}, status: 200},
		{method: "POST", path: "/v1/import", body: "{\"name\": \"imp/form\", \"value\": 1}\n", headers: []string{"Content-Type: application/x-www-form-urlencoded"}, status: 200}, // curl --data-binary
		{method: "GET", path: "/v1/hits/hits%2Fpage", status: 200},
		{method: "GET", path: "/v1/hits/hits%2Fpage/badge.svg?label=views&format=comma", status: 200},
		{method: "GET", path: "/v1/counters/hits%2Fpage/badge.svg?show=today_total", status: 200},
		{method: "GET", path: "/v1/counters/hits%2Fpage/badge.svg?label=&color=BrightGreen&label_color=%23AbC", status: 200},
		{method: "GET", path: "/v1/counters/hits%2Fpage/shields.json?color=blue", status: 200},
		{method: "GET", path: "/v1/counters/a/shields.json", status: 200}, // private: read with the admin token
		{method: "GET", path: "/v1/hits/hits%2Fpage/history?step=day", status: 200},
		{method: "GET", path: "/v1/counters/hits%2Fpage/history?step=day&tz=Asia/Kolkata", status: 200},
		{method: "GET", path: "/v1/history?prefix=hits%2F&step=day", status: 200},
		{method: "POST", path: "/v1/counters/a/increment", body: `{"by": 2, "labels": {"channel": "web", "region": "EU"}}`, status: 200},
		{method: "POST", path: "/v1/counters/batch", body: `{"increments": [{"name": "a", "by": 1, "labels": {"channel": "shop"}}]}`, status: 200},
		{method: "GET", path: "/v1/counters/a/breakdown?by=channel&from=2025-04-01&to=2025-04-08&limit=5", status: 200},
		{method: "GET", path: "/v1/breakdown?prefix=a&by=name&tz=Europe/Berlin", status: 200},
		{method: "GET", path: "/v1/hits/hits%2Fpage/breakdown?by=referrer", status: 200},
		{method: "GET", path: "/v1/hits/breakdown?prefix=hits%2F&by=name", status: 200},
		{method: "GET", path: "/v1/hits/hits%2Fpage/badge.svg?show=visitors", status: 200},
		{method: "GET", path: "/v1/counters/hits%2Fpage/shields.json?show=visitors&tz=America/New_York", status: 200},
		{method: "GET", path: "/v1/counters/a/events", status: 200},
		{method: "GET", path: "/v1/events?prefix=a", headers: []string{"Last-Event-ID: 1"}, status: 200},
		{method: "GET", path: "/v1/hits/hits%2Fpage/events", status: 200},
		{method: "POST", path: "/v1/boards", body: `{"company_id": 1, "slug": "ROCK", "title": "Rock"}`, status: 201},
		{method: "GET", path: b, status: 200},
		{method: "POST", path: b + "/tickets", body: `{"title": "Stars", "description": "Missed."}`, status: 201},
		{method: "GET", path: b + "/tickets?after=1&limit=1", status: 200},
		{method: "GET", path: b + "/tickets/1", status: 200},
		{method: "GET", path: "/v1/companies/1/tickets/ninja-2", status: 200},
		{method: "DELETE", path: b + "/tickets/3", status: 204},
		{method: "POST", path: "/v1/keys", body: `{"name": "shop B", "scopes": ["read", "write"], "prefixes": ["shopB/"], "companies": [1]}`, status: 201},
		{method: "POST", path: "/v1/keys", body: `{"name": "everything", "scopes": ["read"], "prefixes": [""], "expires_at": "2999-01-01T00:00:00Z"}`, status: 201},
		{method: "GET", path: "/v1/keys", status: 200},
		{method: "GET", path: "/v1/me", status: 200},
		{method: "HEAD", path: "/v1/me", status: 200},
		{method: "GET", path: spareKey, status: 200},
		{method: "DELETE", path: spareKey, status: 204},
		{method: "POST", path: "/v1/webhooks", body: `{` + hookURL + `"name": "wh/y", "thresholds": [100]}`, status: 201},
		{method: "POST", path: "/v1/webhooks", body: `{` + hookURL + `"prefix": "wh/", "window": "6h", "below": 1}`, status: 201},
		{method: "GET", path: "/v1/webhooks", status: 200},
		{method: "GET", path: h, status: 200},
		{method: "GET", path: h + "/deliveries?limit=5", status: 200},
		{method: "POST", path: h + "/enable", status: 200},
		{method: "POST", path: h + "/rotate", status: 200},
		{method: "DELETE", path: spareH, status: 204},
		{method: "POST", path: "/v1/annotations", body: `{"name": "a", "text": "Price cut"}`, status: 201},
		{method: "POST", path: "/v1/annotations", body: `{"prefix": "a", "at": "2025-04-01T09:00:00Z", "text": "Launch"}`, status: 201},
		{method: "GET", path: "/v1/annotations?name=a&from=2025-01-01&tz=Europe/Berlin", status: 200},
		{method: "GET", path: "/v1/annotations?prefix=a", status: 200},
		{method: "DELETE", path: n, status: 204},
		{method: "GET", path: "/v1/counters/a/history?annotations=true", status: 200},
		{method: "GET", path: "/v1/counters/a/history?format=csv", status: 200},
		{method: "GET", path: "/v1/history?prefix=a&annotations=true", headers: []string{"Accept: text/csv"}, status: 200},
		{method: "GET", path: "/v1/hits/hits%2Fpage/history?annotations=true&format=json", status: 200},
		{method: "GET", path: "/v1/counters/a/breakdown?by=channel&format=csv", status: 200},
		{method: "GET", path: "/v1/breakdown?prefix=a&by=name&annotations=true", status: 200},
		{method: "GET", path: "/v1/export?prefix=a&format=csv", status: 200},
	}
	// The documented refusals, each provoked.
	refused := []exchange{
		// 400 invalid_argument
		{method: "POST", path: "/v1/counters/a/increment?by=1", body: `{"by": 1}`, status: 400,
			unwritable: "the step given twice, in the query and in the body: no one schema sees both"},
		{method: "POST", path: "/v1/counters/a/increment", body: `{"by": 1.5}`, status: 400},
		{method: "GET", path: "/v1/counters/bad%01name", status: 400},
		{method: "PUT", path: "/v1/counters/a", body: `{"value": 1, "colour": "red"}`, status: 400},
		{method: "PUT", path: "/v1/counters/a", body: `{"value": 1}`, headers: []string{"If-None-Match: abc"}, status: 400},
		{method: "DELETE", path: "/v1/counters/" + strings.Repeat("n", 256), status: 400},
		{method: "GET", path: "/v1/counters?limit=0", status: 400},
		{method: "POST", path: "/v1/counters/reset", body: `{"prefix": ""}`, status: 400},
		{method: "POST", path: "/v1/counters/batch", body: `{"increments": []}`, status: 400},
		{method: "GET", path: "/v1/counters/a/history?step=week", status: 400},
		{method: "POST", path: "/v1/counters/a/increment", body: `{"labels": {"Channel": "web"}}`, status: 400},
		{method: "GET", path: "/v1/counters/a/breakdown", status: 400},
		{method: "GET", path: "/v1/breakdown?prefix=a&by=channel&limit=0", status: 400},
		{method: "GET", path: "/v1/hits/breakdown?by=name", status: 400},
		{method: "GET", path: "/v1/hits/hits%2Fpage/breakdown?by=Referrer", status: 400},
		{method: "GET", path: "/v1/history?step=day", status: 400},
		{method: "GET", path: "/v1/hits/hits%2F%7F", status: 400},
		{method: "GET", path: "/v1/hits/hits%2F%7F/events", status: 400},
		{method: "GET", path: "/v1/counters/bad%01name/events", status: 400},
		{method: "GET", path: "/v1/events?prefix=", status: 400},
		{method: "GET", path: "/v1/hits/hits%2Fpage/badge.svg?style=round", status: 400},
		{method: "GET", path: "/v1/counters/hits%2Fpage/badge.svg?format=roman", status: 400},
		{method: "GET", path: "/v1/counters/hits%2Fpage/shields.json?show=yesterday", status: 400},
		{method: "GET", path: "/v1/hits/hits%2Fpage/history?tz=Mars%2FOlympus", status: 400,
			unwritable: "a zone the zone database does not have: a schema cannot list the database"},
		{method: "POST", path: "/v1/boards", body: `{"company_id": 1, "slug": "1X", "title": "Bad"}`, status: 400},
		{method: "GET", path: "/v1/boards/x", status: 400},
		{method: "POST", path: b + "/tickets", body: `{"title": ""}`, status: 400},
		{method: "GET", path: b + "/tickets?limit=1001", status: 400},
		{method: "GET", path: b + "/tickets/0", status: 400},
		{method: "DELETE", path: b + "/tickets/x", status: 400},
		{method: "GET", path: "/v1/companies/1/tickets/NINJA", status: 400},
		{method: "POST", path: "/v1/keys", body: `{"name": "x", "scopes": ["everything"]}`, status: 400},
		{method: "GET", path: "/v1/keys/x", status: 400},
		{method: "DELETE", path: "/v1/keys/0", status: 400},
		{method: "POST", path: "/v1/webhooks", body: `{"url": "ftp://example.com/", "name": "a", "thresholds": [1]}`, status: 400},
		{method: "POST", path: "/v1/webhooks", body: `{` + hookURL + `"name": "a", "prefix": "a"}`, status: 400},
		{method: "POST", path: "/v1/webhooks", body: `{` + hookURL + `"name": "a", "window": "1h", "above": 5, "below": 1}`, status: 400},
		{method: "POST", path: "/v1/webhooks", body: `{` + hookURL + `"name": "a", "window": "1h", "above": 5, "every": 10}`, status: 400},
		{method: "POST", path: "/v1/webhooks", body: `{` + hookURL + `"name": "a", "window": "1h", "below": 0}`, status: 400},
		{method: "POST", path: "/v1/webhooks", body: `{` + hookURL + `"name": "a", "window": "4m", "above": 5}`, status: 400,
			unwritable: "a window's bounds, 5m to 7d in any spelling, are no pattern's to say"},
		{method: "POST", path: "/v1/webhooks", body: `{"url": "https://127.0.0.1/", "name": "a", "thresholds": [1]}`, status: 400,
			unwritable: "where a URL's host leads (here loopback) is no schema's to say"},
		{method: "GET", path: "/v1/webhooks/x", status: 400},
		{method: "DELETE", path: "/v1/webhooks/0", status: 400},
		{method: "GET", path: h + "/deliveries?limit=0", status: 400},
		{method: "POST", path: "/v1/webhooks/x/enable", status: 400},
		{method: "POST", path: "/v1/webhooks/0/rotate", status: 400},
		{method: "GET", path: "/v1/counters?prefix=%01", status: 400},
		{method: "GET", path: "/v1/counters?limit=ten", status: 400},
		{method: "GET", path: "/v1/counters/" + strings.Repeat("%C3%A9", 128), status: 400,
			unwritable: "256 bytes in 128 characters: a schema's maxLength counts characters"},
		{method: "POST", path: "/v1/counters/a/increment", body: `{"by": "1"}`, status: 400},
		{method: "POST", path: "/v1/counters/a/increment", headers: []string{"Idempotency-Key: " + strings.Repeat("k", 256)}, status: 400},
		{method: "PUT", path: "/v1/counters/a", body: `{"value": 1, "min": 5, "max": 1}`, status: 400,
			unwritable: "min above max: a schema cannot compare two of the values"},
		{method: "POST", path: "/v1/counters/reset", body: `{"prefix": "a", "all": true}`, status: 400},
		{method: "POST", path: "/v1/counters/batch", body: `{"increments": [{"name": "a"}]}`, status: 400},
		{method: "GET", path: "/v1/counters/a/history?from=yesterday", status: 400},
		{method: "GET", path: "/v1/counters/a/history?format=xml", status: 400},
		{method: "GET", path: "/v1/counters/a/breakdown?by=channel&annotations=yes", status: 400},
		{method: "GET", path: "/v1/export?prefix=a&format=tsv", status: 400},
		{method: "POST", path: "/v1/annotations", body: `{"name": "a", "text": ""}`, status: 400},
		{method: "POST", path: "/v1/annotations", body: `{"name": "a", "text": "` + strings.Repeat("é", 281) + `"}`, status: 400},
		{method: "POST", path: "/v1/annotations", body: `{"name": "a", "prefix": "a", "text": "both"}`, status: 400},
		{method: "POST", path: "/v1/annotations", body: `{"text": "neither"}`, status: 400},
		{method: "GET", path: "/v1/annotations", status: 400,
			unwritable: "exactly one of two query parameters: a schema cannot relate two parameters"},
		{method: "GET", path: "/v1/annotations?name=a&from=soon", status: 400},
		{method: "DELETE", path: "/v1/annotations/0", status: 400},
		{method: "GET", path: "/v1/counters/a/history?from=2025-02-01&to=2025-01-01", status: 400,
			unwritable: "from after to: a schema cannot compare two parameters"},
		{method: "GET", path: "/v1/hits/hits%2Fpage/badge.svg?label=" + strings.Repeat("x", 65), status: 400},
		{method: "GET", path: "/v1/hits/hits%2Fpage/badge.svg?label=a%01", status: 400},
		{method: "GET", path: "/v1/counters/hits%2Fpage/badge.svg?color=url(x)", status: 400,
			unwritable: "a colour's grammar (CSS names, rgb(), hsl()) is the service's to check, not a pattern's"},
		{method: "POST", path: "/v1/boards", body: `{"company_id": 0, "slug": "ZERO", "title": "Zero"}`, status: 400},
		{method: "POST", path: "/v1/boards", body: `{"company_id": 1, "slug": "BLANK", "title": "   "}`, status: 400},
		{method: "POST", path: b + "/tickets", body: `{"title": "x", "description": null}`, status: 400},
		{method: "POST", path: b + "/tickets", body: `{"title": "x", "description": "` + strings.Repeat("d", 3001) + `"}`, status: 400},
		{method: "GET", path: b + "/tickets?after=-1", status: 400},
		{method: "GET", path: "/v1/companies/1/tickets/NINJA-07", status: 400},
		{method: "POST", path: "/v1/keys", body: `{"name": "", "scopes": ["read"]}`, status: 400},
		{method: "POST", path: "/v1/keys", body: `{"name": "x", "scopes": []}`, status: 400},
		{method: "POST", path: "/v1/keys", body: `{"name": "x", "scopes": ["read"], "prefixes": ["a\u0001"]}`, status: 400},
		{method: "POST", path: "/v1/keys", body: `{"name": "x", "scopes": ["read"], "companies": [0]}`, status: 400},
		{method: "POST", path: "/v1/keys", body: `{"name": "x", "scopes": ["read"], "expires_at": "2001-01-01T00:00:00Z"}`, status: 400,
			unwritable: "a time in the past: a schema has no clock"},
		// 401 unauthenticated: a wrong token (a missing one is replayed below)
		{method: "GET", path: "/v1/counters/a", headers: []string{"Authorization: Bearer wrong"}, status: 401},
		{method: "GET", path: "/v1/counters/a/badge.svg", headers: []string{"Authorization: Bearer wrong"}, status: 401},
		{method: "GET", path: "/v1/counters/a/shields.json", headers: []string{"Authorization: Bearer wrong"}, status: 401},
		// 403 permission_denied: reserved names, names outside the public
		// prefixes, and a key outside its scope, prefixes or companies
		{method: "POST", path: "/v1/counters/_x/increment", status: 403},
		{method: "PUT", path: "/v1/counters/_x", body: `{"value": 1}`, status: 403},
		{method: "DELETE", path: "/v1/counters/_x", status: 403},
		{method: "POST", path: "/v1/counters/batch", body: batchBody(item("a", 1), item("_x", 1)), status: 403},
		{method: "GET", path: "/v1/counters/a", headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/counters?prefix=a", headers: []string{asReader}, status: 403},
		{method: "POST", path: "/v1/counters/reset", body: `{"all": true}`, headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/counters/a/history", headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/me", headers: []string{bearerOf(writer.Secret)}, status: 403},
		{method: "HEAD", path: "/v1/me", headers: []string{bearerOf(writer.Secret)}, status: 403},
		{method: "GET", path: "/v1/history?prefix=a", headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/export?prefix=a", headers: []string{asReader}, status: 403},
		{method: "POST", path: "/v1/import", body: "{\"name\": \"imp/c\", \"value\": 1}\n", headers: []string{ndjson, asReader}, status: 403},
		{method: "GET", path: "/v1/hits/private", status: 403},
		{method: "GET", path: "/v1/hits/private/badge.svg", status: 403},
		{method: "GET", path: "/v1/counters/a/badge.svg", headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/counters/a/shields.json", headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/hits/a/history", status: 403},
		{method: "GET", path: "/v1/counters/a/breakdown?by=channel", headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/breakdown?prefix=a&by=channel", headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/hits/a/breakdown?by=channel", status: 403},
		{method: "GET", path: "/v1/hits/breakdown?prefix=a&by=channel", status: 403},
		{method: "GET", path: "/v1/hits/private/events", status: 403},
		{method: "GET", path: "/v1/counters/a/events", headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/events?prefix=a", headers: []string{asReader}, status: 403},
		{method: "POST", path: "/v1/boards", body: `{"company_id": 1, "slug": "NOPE", "title": "No"}`, headers: []string{asReader}, status: 403},
		{method: "GET", path: b, headers: []string{asReader}, status: 403},
		{method: "POST", path: b + "/tickets", body: `{"title": "No"}`, headers: []string{asReader}, status: 403},
		{method: "GET", path: b + "/tickets", headers: []string{asReader}, status: 403},
		{method: "GET", path: b + "/tickets/1", headers: []string{asReader}, status: 403},
		{method: "DELETE", path: b + "/tickets/1", headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/companies/1/tickets/NINJA-1", headers: []string{asReader}, status: 403},
		{method: "POST", path: "/v1/keys", body: `{"name": "x", "scopes": ["admin"]}`, headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/keys", headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/keys/1", headers: []string{asReader}, status: 403},
		{method: "DELETE", path: "/v1/keys/1", headers: []string{asReader}, status: 403},
		{method: "POST", path: "/v1/webhooks", body: `{` + hookURL + `"name": "shopA/x", "thresholds": [1]}`, headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/webhooks", headers: []string{asReader}, status: 403},
		{method: "GET", path: h, headers: []string{asReader}, status: 403},
		{method: "DELETE", path: h, headers: []string{asReader}, status: 403},
		{method: "GET", path: h + "/deliveries", headers: []string{asReader}, status: 403},
		{method: "POST", path: h + "/enable", headers: []string{asReader}, status: 403},
		{method: "POST", path: h + "/rotate", headers: []string{asReader}, status: 403},
		{method: "POST", path: "/v1/annotations", body: `{"name": "_x", "text": "reserved"}`, status: 403},
		{method: "POST", path: "/v1/annotations", body: `{"name": "shopA/x", "text": "read only"}`, headers: []string{asReader}, status: 403},
		{method: "GET", path: "/v1/annotations?prefix=a", headers: []string{asReader}, status: 403},
		{method: "DELETE", path: n, headers: []string{asReader}, status: 403},
		// 404 not_found
		{method: "GET", path: "/v1/counters/nothing", status: 404},
		{method: "DELETE", path: "/v1/counters/nothing", status: 404},
		{method: "GET", path: "/v1/counters/nothing/history", status: 404},
		{method: "GET", path: "/v1/counters/nothing/breakdown?by=channel", status: 404},
		{method: "GET", path: "/v1/hits/hits%2Fnothing/breakdown?by=channel", status: 404},
		{method: "GET", path: "/v1/counters/hits%2Fnothing/badge.svg", status: 404},
		{method: "GET", path: "/v1/counters/hits%2Fnothing/shields.json", status: 404},
		{method: "GET", path: "/v1/hits/hits%2Fnothing/history", status: 404},
		{method: "GET", path: "/v1/counters/nothing/events", status: 404},
		{method: "GET", path: "/v1/boards/999999", status: 404},
		{method: "POST", path: "/v1/boards/999999/tickets", body: `{"title": "Lost"}`, status: 404},
		{method: "GET", path: "/v1/boards/999999/tickets", status: 404},
		{method: "GET", path: b + "/tickets/999", status: 404},
		{method: "DELETE", path: b + "/tickets/999", status: 404},
		{method: "GET", path: "/v1/companies/1/tickets/NINJA-999", status: 404},
		{method: "GET", path: "/v1/keys/999999", status: 404},
		{method: "DELETE", path: spareKey, status: 404},
		{method: "GET", path: "/v1/webhooks/999999", status: 404},
		{method: "DELETE", path: spareH, status: 404},
		{method: "GET", path: "/v1/webhooks/999999/deliveries", status: 404},
		{method: "POST", path: "/v1/webhooks/999999/enable", status: 404},
		{method: "POST", path: "/v1/webhooks/999999/rotate", status: 404},
		{method: "DELETE", path: n, status: 404},
		// 409 conflict
		{method: "POST", path: "/v1/counters/a/increment", body: `{"by": 2}`, headers: []string{"Idempotency-Key: once"}, status: 409},
		{method: "PUT", path: "/v1/counters/a", body: `{"value": 1}`, headers: []string{"If-None-Match: *"}, status: 409},
		{method: "POST", path: "/v1/counters/batch", body: batchBody(item("a", 1)), headers: []string{"Idempotency-Key: once"}, status: 409},
		{method: "POST", path: "/v1/import", body: "{\"name\": \"imp/b\", \"value\": 2}\n", headers: []string{ndjson, "Idempotency-Key: import-once"}, status: 409},
		{method: "POST", path: "/v1/import?mode=merge", body: "{\"name\": \"imp/d\", \"value\": 1}\n", headers: []string{ndjson}, status: 400},
		{method: "POST", path: "/v1/import?atomic=true", body: "{\"name\": \"imp/d\", \"value\": 1}\nnot json\n", headers: []string{ndjson}, status: 400,
			unwritable: "each line of the body is JSON of its own, which no schema of a request body can check"},
		{method: "POST", path: "/v1/import?atomic=true", body: "{\"name\": \"imp/d\", \"value\": 5, \"max\": 1}\n", headers: []string{ndjson}, status: 422},
		{method: "POST", path: "/v1/boards", body: `{"company_id": 1, "slug": "NINJA", "title": "Again"}`, status: 409},
		// 413 payload_too_large: announced, never sent
		{method: "POST", path: "/v1/counters/a/increment", announce: 70 << 10, status: 413},
		{method: "PUT", path: "/v1/counters/a", announce: 70 << 10, status: 413},
		{method: "POST", path: "/v1/counters/reset", announce: 70 << 10, status: 413},
		{method: "POST", path: "/v1/counters/batch", announce: 70 << 10, status: 413},
		{method: "POST", path: "/v1/boards", announce: 70 << 10, status: 413},
		{method: "POST", path: b + "/tickets", announce: 70 << 10, status: 413},
		{method: "POST", path: "/v1/keys", announce: 70 << 10, status: 413},
		{method: "POST", path: "/v1/webhooks", announce: 70 << 10, status: 413},
		{method: "POST", path: "/v1/annotations", announce: 70 << 10, status: 413},
		// 415 unsupported_media_type: a body that is not JSON by its type
		{method: "POST", path: "/v1/counters/a/increment", body: `{"by": 1}`, headers: []string{textPlain}, status: 415},
		{method: "PUT", path: "/v1/counters/a", body: `{"value": 1}`, headers: []string{textPlain}, status: 415},
		{method: "POST", path: "/v1/counters/reset", body: `{"prefix": "a", "value": 0}`, headers: []string{textPlain}, status: 415},
		{method: "POST", path: "/v1/counters/batch", body: batchBody(item("a", 1)), headers: []string{textPlain}, status: 415},
		{method: "POST", path: "/v1/boards", body: `{"company_id": 1, "slug": "X", "title": "X"}`, headers: []string{textPlain}, status: 415},
		{method: "POST", path: b + "/tickets", body: `{"title": "X"}`, headers: []string{textPlain}, status: 415},
		{method: "POST", path: "/v1/keys", body: `{"name": "x", "scopes": ["read"]}`, headers: []string{textPlain}, status: 415},
		{method: "POST", path: "/v1/webhooks", body: `{"url": "https://93.184.215.14/x", "prefix": "x/", "every": 1}`, headers: []string{textPlain}, status: 415},
		{method: "POST", path: "/v1/annotations", body: `{"name": "a", "text": "x"}`, headers: []string{textPlain}, status: 415},
		{method: "POST", path: "/v1/import", body: "--x\r\nContent-Disposition: form-data; name=\"file\"; filename=\"e.jsonl\"\r\n\r\n{\"name\": \"imp/e\", \"value\": 1}\n\r\n--x--\r\n",
			headers: []string{"Content-Type: multipart/form-data; boundary=x"}, status: 415}, // curl -F file=@e.jsonl
		// 422 out_of_range (the reset of every counter above set them to 0)
		{method: "PUT", path: "/v1/counters/top", body: `{"value": 9223372036854775807}`, status: 201},
		{method: "PUT", path: "/v1/counters/hits%2Ftop", body: `{"value": 9223372036854775807}`, status: 201},
		{method: "POST", path: "/v1/counters/top/increment", status: 422},
		{method: "PUT", path: "/v1/counters/stock", body: `{"value": -1}`, status: 422},
		{method: "POST", path: "/v1/counters/reset", body: `{"prefix": "stock", "value": -1}`, status: 422},
		{method: "POST", path: "/v1/counters/batch", body: batchBody(item("a", 1), item("top", 1)), status: 422},
		{method: "GET", path: "/v1/hits/hits%2Ftop", status: 422},
		{method: "GET", path: "/v1/hits/hits%2Ftop/badge.svg", status: 422},
	}
	t.Run("succeeds", func(t *testing.T) { s.drive(t, e, succeeds, admin) })
	t.Run("refused", func(t *testing.T) { s.drive(t, e, refused, admin) })
	t.Run("webhook limit", func(t *testing.T) {
		one := apptest.New(t, func(c *wire.Config) { c.Webhooks.MaxPerKey = 1 })
		body := `{` + hookURL + `"name": "a", "thresholds": [1]}`
		s.do(t, one, exchange{method: "POST", path: "/v1/webhooks", body: body, status: 201})
		s.do(t, one, exchange{method: "POST", path: "/v1/webhooks", body: body, status: 422})
	})
	t.Run("not modified", func(t *testing.T) {
		gzip := "Accept-Encoding: gzip"              // Go's client asks for gzip on GET, not on HEAD
		camo := "User-Agent: github-camo (876de43e)" // an image proxy revalidates badges by ETag
		for _, x := range []struct{ path, header string }{
			{"/v1/counters/a", gzip},
			{"/v1/snippet.js", gzip},
			{"/v1/counters/hits%2Fpage/badge.svg", camo},
			{"/v1/hits/hits%2Fpage/badge.svg", camo},
		} {
			// Every view through the proxy counts: the counted badge shows
			// an unchanged value again only after the counter was set back.
			e.Do(t, "PUT", "/v1/counters/hits%2Fpage", `{"value": 100}`, admin)
			tag := e.Do(t, "GET", x.path, "", admin, x.header).Header.Get("ETag")
			e.Do(t, "PUT", "/v1/counters/hits%2Fpage", `{"value": 100}`, admin)
			s.drive(t, e, []exchange{{method: "GET", path: x.path, headers: []string{"If-None-Match: " + tag, x.header}, status: 304}}, admin)
		}
	})
	t.Run("no token", func(t *testing.T) {
		for _, x := range succeeds {
			if s.public(x) {
				continue
			}
			x.status = http.StatusUnauthorized
			s.doWithHead(t, e, x, x.status)
		}
		// An image client (a page's <img>) is answered a drawn badge, as
		// the guide promises: its 401 is an image the document must list.
		for _, headers := range [][]string{{"Accept: image/*"}, {"Accept: image/*", "Authorization: Bearer wrong"}} {
			x := exchange{method: "GET", path: "/v1/counters/a/badge.svg", headers: headers, status: 401}
			if r := s.do(t, e, x); !strings.HasPrefix(r.Header.Get("Content-Type"), "image/svg+xml") || !strings.Contains(string(r.Body), "unauthenticated") {
				t.Errorf("%s %q: %s %.200s, want a badge reading unauthenticated", x, headers, r.Header.Get("Content-Type"), r.Body)
			}
			x.method = http.MethodHead
			s.do(t, e, x)
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		// Redis's database 1: the cache of this service's own MySQL database
		// must not meet the other one's under the same keys.
		limited := apptest.NewWithCache(t, strings.TrimSuffix(rd.URL(), "/0")+"/1", func(c *wire.Config) {
			c.Hits.Limits.Rate, c.Hits.Limits.RateWindow, c.Hits.Limits.DedupWindow = 1, time.Hour, 0
			// A limit check that times out lets the hit through (fail
			// open); a loaded test machine must not make that happen here.
			c.Cache.Timeout = 5 * time.Second
		})
		for _, path := range []string{"/v1/hits/hits%2Fa", "/v1/hits/hits%2Fb/badge.svg"} {
			first := limited.Do(t, "GET", path, "")
			if first.Status != 200 && first.Status != 429 {
				t.Fatalf("GET %s: %d %s", path, first.Status, first.Body)
			}
			s.do(t, limited, exchange{method: "GET", path: path, status: 429})
		}
	})
	t.Run("too many streams", func(t *testing.T) {
		capped := apptest.NewWithDSN(t, e.DSN, withToken, func(c *wire.Config) { c.Live.MaxPerAddr = 1 })
		held := apptest.OpenStream(t, capped.URL+"/v1/hits/hits%2Fpage/events")
		defer held.Close()
		for _, path := range []string{"/v1/counters/a/events", "/v1/events?prefix=a", "/v1/hits/hits%2Fpage/events"} {
			s.doWithHead(t, capped, exchange{method: "GET", path: path, headers: []string{admin}, status: 429}, 429)
		}
	})
	t.Run("options", func(t *testing.T) {
		for _, item := range s.doc.Paths.InMatchingOrder() {
			if s.doc.Paths.Value(item).Options == nil {
				continue
			}
			path := strings.ReplaceAll(item, "{name}", "hits%2Fpage")
			s.do(t, e, exchange{method: "OPTIONS", path: path, status: 204})
			s.do(t, e, exchange{method: "OPTIONS", path: path, status: 204,
				headers: []string{"Origin: https://example.org", "Access-Control-Request-Method: GET", "Access-Control-Request-Headers: X-Request-ID"}})
		}
	})
	t.Run("MySQL down", func(t *testing.T) {
		m := testenv.StartMariaDB(t)
		down := apptest.NewWithDSN(t, m.DSN("conformance"), withToken, func(c *wire.Config) { c.MySQL.Timeout = time.Second })
		m.Kill()
		for _, x := range succeeds {
			if op := s.operation(x); op != nil && op.Responses.Status(503) != nil {
				x.status = http.StatusServiceUnavailable
			}
			s.doWithHead(t, down, withHeader(x, admin), x.status)
		}
	})

	t.Run("coverage", func(t *testing.T) {
		var missingOps, missingAnswers []string
		for id, op := range s.operations() {
			if s.seen[id] == nil {
				missingOps = append(missingOps, id)
				continue
			}
			for status := range op.Responses.Map() {
				n, err := strconv.Atoi(status)
				if err != nil || s.seen[id][n] {
					continue
				}
				if _, ok := answerNotProvoked[status]; ok {
					continue
				}
				if _, ok := answerNotProvoked[id+" "+status]; ok {
					continue
				}
				missingAnswers = append(missingAnswers, id+" "+status)
			}
		}
		sort.Strings(missingOps)
		sort.Strings(missingAnswers)
		if len(missingOps) > 0 {
			t.Errorf("operations of openapi.yaml no request exercised: %v", missingOps)
		}
		if len(missingAnswers) > 0 {
			t.Errorf("answers openapi.yaml lists that no request provoked: %v", missingAnswers)
		}
	})
}

// drive sends each exchange with the admin's token unless it brings its
// own Authorization.
func (s *spec) drive(t *testing.T, e *apptest.Env, xs []exchange, admin string) {
	t.Helper()
	for _, x := range xs {
		head := x.status
		if x.status == 422 || x.path == "/v1/hits/hits%2Fpage" {
			head = 200 // HEAD counts no hit: it cannot overflow
		}
		s.doWithHead(t, e, withHeader(x, admin), head)
	}
}

// doWithHead sends x and, when it is a GET, the same request as HEAD, to
// be answered with headStatus: HEAD answers as GET does, without the body
// (and on a hit endpoint counting no hit).
func (s *spec) doWithHead(t *testing.T, e *apptest.Env, x exchange, headStatus int) {
	t.Helper()
	s.do(t, e, x)
	if x.method == http.MethodGet {
		x.method, x.status = http.MethodHead, headStatus
		s.do(t, e, x)
	}
}

// operation is the spec's operation for x, nil for none.
func (s *spec) operation(x exchange) *openapi3.Operation {
	route, _, err := s.router.FindRoute(httptest.NewRequest(x.method, "http://service"+x.path, nil))
	if err != nil {
		return nil
	}
	return route.Operation
}

// public reports whether x's operation serves a request without a token.
func (s *spec) public(x exchange) bool {
	op := s.operation(x)
	if op == nil || op.Security == nil {
		return false
	}
	// No requirement, or an empty one among the alternatives: anonymous
	// requests are served (the read-only badges also take credentials).
	return len(*op.Security) == 0 || slices.ContainsFunc(*op.Security, func(r openapi3.SecurityRequirement) bool { return len(r) == 0 })
}

// withHeader adds h (an Authorization) unless x brings its own.
func withHeader(x exchange, h string) exchange {
	name, _, _ := strings.Cut(h, ":")
	for _, have := range x.headers {
		if k, _, _ := strings.Cut(have, ":"); strings.EqualFold(k, name) {
			return x
		}
	}
	x.headers = append(slices.Clip(x.headers), h)
	return x
}

// A method a path does not serve is 405 with the methods openapi.yaml
// lists for it in Allow; an unknown path is 404 and an unknown method 501,
// all in the spec's Error schema.
func TestWrongMethodsMatchOpenAPI(t *testing.T) {
	t.Parallel()
	s := loadSpec(t)
	e := apptest.New(t)
	errSchema := s.doc.Components.Schemas["Error"].Value
	for _, item := range s.doc.Paths.InMatchingOrder() {
		pi := s.doc.Paths.Value(item)
		path := strings.NewReplacer("{name}", "a", "{board_id}", "1", "{local_id}", "1",
			"{company_id}", "1", "{key}", "A-1", "{id}", "1").Replace(item)
		var allow []string
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"} {
			if pi.GetOperation(m) != nil {
				allow = append(allow, m)
			}
		}
		if path == "/v1/counters/reset" || path == "/v1/counters/batch" {
			continue // also /v1/counters/{name}: its methods answer there
		}
		r := e.Do(t, "PATCH", path, "")
		if r.Status != http.StatusMethodNotAllowed {
			t.Errorf("PATCH %s: %d, want 405", path, r.Status)
			continue
		}
		got := strings.Split(r.Header.Get("Allow"), ", ")
		slices.Sort(got)
		slices.Sort(allow)
		if !slices.Equal(got, allow) {
			t.Errorf("PATCH %s: Allow %v, openapi.yaml lists %v", path, got, allow)
		}
		validateError(t, errSchema, "PATCH "+path, r.Body)
	}
	for _, x := range []struct{ method, path string }{{"GET", "/v1/nothing"}, {"FOO", "/v1/counters/a"}} {
		validateError(t, errSchema, x.method+" "+x.path, e.Do(t, x.method, x.path, "").Body)
	}
}

func validateError(t *testing.T, schema *openapi3.Schema, what string, body []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Errorf("%s: body %q is not JSON", what, body)
		return
	}
	if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		t.Errorf("%s: body %s is not the spec's Error: %v", what, body, err)
	}
}

// Every route the service serves, HEAD and OPTIONS included, is an
// operation of openapi.yaml (TestOpenAPIDocumentsExactlyTheServedRoutes
// holds the other methods both ways; TestEveryAnswerMatchesOpenAPI
// exercises every operation).
func TestOpenAPIListsEveryHeadAndOptionsRoute(t *testing.T) {
	t.Parallel()
	s := loadSpec(t)
	e := apptest.New(t)
	for _, r := range e.App.GetRoutes(true) {
		if r.Method != http.MethodHead && r.Method != http.MethodOptions || strings.Contains(r.Path, "*") {
			continue
		}
		item := s.doc.Paths.Value(fiberParam.ReplaceAllString(r.Path, "{$1}"))
		if item == nil || item.GetOperation(r.Method) == nil {
			t.Errorf("%s %s is served but not in openapi.yaml", r.Method, r.Path)
		}
	}
}
