package app_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/wire"
)

func TestCounterEndpointsAnswerWithContractStatuses(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	steps := []struct {
		method, path, body string
		headers            []string
		wantStatus         int
		wantBody           string // substring; for errors the code
	}{
		{"GET", "/v1/counters/a", "", nil, 404, "not_found"},
		{"POST", "/v1/counters/a/increment", "", nil, 200, `{"name":"a","value":1}`},
		{"POST", "/v1/counters/a/increment", `{"by": 5}`, nil, 200, `"value":6`},
		{"POST", "/v1/counters/a/increment?by=-10", "", nil, 200, `"value":-4`},
		{"POST", "/v1/counters/a/increment?by=0", "", nil, 200, `"value":-4`},
		{"POST", "/v1/counters/a/increment?by=1", `{"by":1}`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/a/increment", `{"by": 1.5}`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/a/increment", `{"by": "1"}`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/a/increment", `{"by": null}`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/a/increment", `{"by": 1e3}`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/a/increment", `{"by": 9223372036854775808}`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/a/increment", `{"step": 1}`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/a/increment", `[1]`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/a/increment", `{"by":1} x`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/a/increment?by=x", "", nil, 400, "invalid_argument"},
		{"GET", "/v1/counters/a", "", nil, 200, `"value":-4`},
		{"PUT", "/v1/counters/b", `{"value": 10}`, nil, 201, `"value":10`},
		{"PUT", "/v1/counters/b", `{"value": 11}`, nil, 200, `"value":11`},
		{"PUT", "/v1/counters/b", `{"value": 12}`, []string{"If-None-Match: *"}, 409, "conflict"},
		{"PUT", "/v1/counters/c", `{"value": 12}`, []string{"If-None-Match: *"}, 201, `"value":12`},
		{"PUT", "/v1/counters/c", `{"value": 1}`, []string{"If-None-Match: abc"}, 400, "invalid_argument"},
		{"PUT", "/v1/counters/c", `{}`, nil, 400, "invalid_argument"},
		{"PUT", "/v1/counters/c", `{"value": 1, "min": 5}`, nil, 422, "out_of_range"},
		{"PUT", "/v1/counters/c", `{"value": 1, "min": 5, "max": 2}`, nil, 400, "invalid_argument"},
		{"PUT", "/v1/counters/c", `{"value": 1, "min": "0"}`, nil, 400, "invalid_argument"},
		{"PUT", "/v1/counters/c", `{"value": 1, "min": 0, "max": null}`, nil, 200, `"min":0`},
		{"GET", "/v1/counters/c", "", nil, 200, `"value":1,"min":0,`},
		{"POST", "/v1/counters/c/increment?by=-2", "", nil, 422, "out_of_range"},
		{"GET", "/v1/counters/c", "", nil, 200, `"value":1,`},
		{"PUT", "/v1/counters/max", `{"value": 9223372036854775807}`, nil, 201, `9223372036854775807`},
		{"POST", "/v1/counters/max/increment", "", nil, 422, "out_of_range"},
		{"GET", "/v1/counters/max", "", nil, 200, `"value":9223372036854775807`},
		{"POST", "/v1/counters/max/increment?by=-9223372036854775808", "", nil, 200, `"value":-1`},
		{"DELETE", "/v1/counters/b", "", nil, 204, ""},
		{"DELETE", "/v1/counters/b", "", nil, 404, "not_found"},
		{"GET", "/v1/counters/b", "", nil, 404, "not_found"},
		{"POST", "/v1/counters/_seq/increment", "", nil, 403, "permission_denied"},
		{"PUT", "/v1/counters/_seq", `{"value": 0}`, nil, 403, "permission_denied"},
		{"DELETE", "/v1/counters/_seq", "", nil, 403, "permission_denied"},
		{"GET", "/v1/counters/_seq", "", nil, 404, "not_found"},
		{"POST", "/v1/counters/reset", `{"prefix": "_"}`, nil, 403, "permission_denied"},
		{"POST", "/v1/counters/reset", `{}`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/reset", `{"prefix": "a", "all": true}`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/reset", `{"all": "yes"}`, nil, 400, "invalid_argument"},
		{"POST", "/v1/counters/reset", `{"all": true, "value": 0}`, nil, 200, `{"reset":3}`},
		{"GET", "/v1/counters?limit=0", "", nil, 400, "invalid_argument"},
		{"GET", "/v1/counters?limit=1001", "", nil, 400, "invalid_argument"},
		{"GET", "/v1/counters?limit=x", "", nil, 400, "invalid_argument"},
		{"GET", "/v1/counters?limit=1", "", nil, 200, `"next_after":"a"`},
		{"GET", "/v1/counters?after=c", "", nil, 200, `"next_after":null`},
		{"GET", "/v1/nothing", "", nil, 404, "not_found"},
		{"PATCH", "/v1/counters/a", "", nil, 405, "method_not_allowed"}, // issue #15: 405 with Allow, was 404; its own code since #31
	}
	for i, st := range steps {
		r := e.Do(t, st.method, st.path, st.body, st.headers...)
		if r.Status != st.wantStatus || !strings.Contains(string(r.Body), st.wantBody) {
			t.Fatalf("step %d: %s %s %s: %d %s, want %d containing %s", i, st.method, st.path, st.body, r.Status, r.Body, st.wantStatus, st.wantBody)
		}
		if r.Status >= 400 && r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("step %d: error content type %q", i, r.Header.Get("Content-Type"))
		}
	}
}

func TestNamesRoundTripAsOnePathSegment(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	names := []string{
		"docs/index.html", "books/Red Horse Hill", `say "hi"`, "it's", "100%", "a+b", "ünïcödé/日本", "emoji 🎉",
		"'; DROP TABLE counter; --", "a?b", "a#b", "..", ".", "a\\b", strings.Repeat("x", 255), strings.Repeat("é", 127),
		"Index.html", "index.html",
	}
	for _, name := range names {
		path := "/v1/counters/" + url.PathEscape(name)
		if strings.Contains(name, "/") {
			path = "/v1/counters/" + strings.ReplaceAll(url.PathEscape(name), "/", "%2F")
		}
		r := e.Do(t, "POST", path+"/increment", "")
		var got struct{ Name string }
		r.Decode(t, &got)
		if r.Status != 200 || got.Name != name {
			t.Fatalf("increment %q: %d %s", name, r.Status, r.Body)
		}
		r = e.Do(t, "GET", path, "")
		r.Decode(t, &got)
		if r.Status != 200 || got.Name != name {
			t.Fatalf("get %q: %d %s", name, r.Status, r.Body)
		}
	}
	// Case-sensitive: the two index names are two counters, each at 1.
	r := e.Do(t, "GET", "/v1/counters/Index.html", "")
	if !strings.Contains(string(r.Body), `"value":1`) {
		t.Fatalf("Index.html: %s", r.Body)
	}
}

func TestBadNamesAreRejectedWithoutChangingAnything(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	bad := []string{
		strings.Repeat("x", 256), // too long
		"%00abc",                 // NUL
		"a%0Ab",                  // newline
		"a%7Fb",                  // DEL
		"%FF%FE",                 // invalid UTF-8
		"%E2%82",                 // truncated UTF-8
		strings.Repeat("é", 128), // 256 bytes
	}
	for _, seg := range bad {
		for _, req := range [][2]string{{"POST", "/increment"}, {"GET", ""}, {"PUT", ""}, {"DELETE", ""}} {
			body := ""
			if req[0] == "PUT" {
				body = `{"value":1}`
			}
			r := e.Do(t, req[0], "/v1/counters/"+seg+req[1], body)
			if r.Status != 400 || r.ErrorCode() != "invalid_argument" {
				t.Fatalf("%s %q: %d %s, want 400", req[0], seg, r.Status, r.Body)
			}
		}
	}
	var n int
	if err := e.DB.QueryRow("SELECT COUNT(*) FROM counter").Scan(&n); err != nil || n != 0 {
		t.Fatalf("counter rows = %d, %v; want 0", n, err)
	}
}

func TestBearerTokenGuardsTheAPIWhenSet(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = "s3cret" })
	cases := []struct {
		headers []string
		want    int
	}{
		{nil, 401},
		{[]string{"Authorization: Bearer wrong"}, 401},
		{[]string{"Authorization: s3cret"}, 401},
		{[]string{"Authorization: Bearer s3cret"}, 200},
	}
	for _, c := range cases {
		if r := e.Do(t, "POST", "/v1/counters/t/increment", "", c.headers...); r.Status != c.want {
			t.Fatalf("headers %v: %d %s, want %d", c.headers, r.Status, r.Body, c.want)
		}
	}
	if r := e.Do(t, "GET", "/healthz", ""); r.Status != 200 {
		t.Fatalf("/healthz needs no token: %d", r.Status)
	}
}

func TestOversizedBodyIs413(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, func(c *wire.Config) { c.HTTP.BodyLimit = 4096 })
	r := announceBody(t, e, "/v1/counters/big/increment", 5000)
	if r.Status != 413 || r.ErrorCode() != "payload_too_large" {
		t.Fatalf("got %d %s", r.Status, r.Body)
	}
}
