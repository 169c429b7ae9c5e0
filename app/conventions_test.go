package app_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// A 503 tells the client when to come back, whichever endpoint gave it:
// client libraries retry on Retry-After, and without it they guess.
func TestEvery503CarriesRetryAfter(t *testing.T) {
	t.Parallel()
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

// /readyz checks MySQL and Redis side by side, each under its own deadline:
// a hung MySQL must not make a healthy Redis look down (and the other way
// round), and the answer comes within about one deadline.
func TestReadyzReportsEachDependencyOnItsOwn(t *testing.T) {
	t.Parallel()
	m := testenv.StartMariaDB(t)
	rd := testenv.StartRedis(t)
	e := apptest.NewWithDSN(t, m.DSN("readyz"), func(c *wire.Config) { c.Cache.RedisURL = rd.URL() })
	var late *time.Timer
	for _, tc := range []struct {
		name         string
		freeze, thaw func()
		status       int
		want         string
	}{
		{"both answer", func() {}, func() {}, 200, `{"status":"ok","mysql":"ok","redis":"ok"}`},
		{"MySQL hangs", m.Freeze, m.Thaw, 503, `{"status":"unavailable","mysql":"down","redis":"ok"}`},
		{"Redis hangs", rd.Freeze, rd.Thaw, 200, `{"status":"degraded","mysql":"ok","redis":"down"}`},
		// Slower than a cache call's 100 ms, as on a busy machine, but
		// within the check's second: Redis answers, so it is not down.
		{"Redis answers late", func() { rd.Freeze(); late = time.AfterFunc(300*time.Millisecond, rd.Thaw) }, func() { late.Stop(); rd.Thaw() },
			200, `{"status":"ok","mysql":"ok","redis":"ok"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.freeze()
			defer tc.thaw()
			start := time.Now()
			r := e.Do(t, "GET", "/readyz", "")
			if r.Status != tc.status || string(r.Body) != tc.want {
				t.Errorf("got %d %s, want %d %s", r.Status, r.Body, tc.status, tc.want)
			}
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("took %v; each check has a one-second deadline", took)
			}
		})
	}
}

// A request id is random when the service makes it, and a client's own is
// kept only when it is short and of safe characters: it is written into
// the logs verbatim.
func TestRequestIDsAreRandomAndClientIDsValidated(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	for _, tc := range []struct {
		name, sent string
		kept       bool
	}{
		{"none sent", "", false},
		{"a UUID", "0f8fad5b-d9cb-469f-a165-70867728950e", true},
		{"base64 with colon", "trace:AbC+/x=", true},
		{"64 characters", strings.Repeat("a", 64), true},
		{"65 characters", strings.Repeat("a", 65), false},
		{"a space", "a b", false},
		{"a quote", `a"b`, false},
		{"not ASCII", "ä", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var headers []string
			if tc.sent != "" {
				headers = append(headers, "X-Request-ID: "+tc.sent)
			}
			got := e.Do(t, "GET", "/healthz", "", headers...).Header.Get("X-Request-ID")
			switch {
			case tc.kept && got != tc.sent:
				t.Errorf("X-Request-ID %q, want the client's %q", got, tc.sent)
			case !tc.kept && (got == tc.sent || len(got) < 20):
				t.Errorf("X-Request-ID %q, want a fresh random id", got)
			}
		})
	}
	// A counter's ids share most of their characters with the previous
	// one; random ones almost never share the first eight.
	a := e.Do(t, "GET", "/healthz", "").Header.Get("X-Request-ID")
	b := e.Do(t, "GET", "/healthz", "").Header.Get("X-Request-ID")
	if a[:8] == b[:8] {
		t.Errorf("consecutive ids %q and %q look sequential", a, b)
	}
}

// The latency histogram resolves the fast paths: its lowest bucket is
// 50 µs, well under a typical 0.2 ms request.
func TestLatencyHistogramResolvesFastRequests(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	e.Do(t, "GET", "/healthz", "")
	r := e.Do(t, "GET", "/metrics", "")
	want := `counters_http_request_duration_seconds_bucket{method="GET",route="/healthz",le="5e-05"}`
	if !strings.Contains(string(r.Body), want) {
		t.Errorf("/metrics has no %s", want)
	}
}

// A known path with a method it does not serve is 405 with Allow, an
// unknown path 404, and a method HTTP client libraries would never send
// 501: each in the JSON error shape, with a request id.
func TestWrongMethodsAnswerInTheErrorShape(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	for _, tc := range []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"PATCH", "/v1/counters/a", 405, "method_not_allowed", "GET, HEAD, PUT, DELETE"},
		{"GET", "/v1/counters/a/increment", 405, "method_not_allowed", "POST"},
		{"DELETE", "/v1/counters", 405, "method_not_allowed", "GET, HEAD"},
		{"POST", "/healthz", 405, "method_not_allowed", "GET, HEAD"},
		{"POST", "/v1/hits/hits%2Fa", 405, "method_not_allowed", "GET, HEAD, OPTIONS"},
		{"PUT", "/v1/counters/a/badge.svg", 405, "method_not_allowed", "GET, HEAD, OPTIONS"},
		{"POST", "/v1/counters/hits%2Fa/shields.json", 405, "method_not_allowed", "GET, HEAD, OPTIONS"},
		{"GET", "/v1/nothing-here", 404, "not_found", ""},
		{"FOO", "/v1/counters/a", 501, "invalid_argument", ""},
		{"PROPFIND", "/v1/nothing-here", 501, "invalid_argument", ""},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.Do(t, tc.method, tc.path, "")
			if r.Status != tc.status || r.ErrorCode() != tc.code {
				t.Errorf("got %d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
			if got := r.Header.Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			if r.Header.Get("X-Request-ID") == "" {
				t.Error("no X-Request-ID")
			}
			// The public endpoints' answers carry their headers, refusals
			// of a method included: a page's script reads them.
			public := strings.HasPrefix(tc.path, "/v1/hits/") || strings.HasSuffix(tc.path, "/badge.svg") || strings.HasSuffix(tc.path, "/shields.json")
			if got := r.Header.Get("Access-Control-Allow-Origin"); public != (got == "*") {
				t.Errorf("Access-Control-Allow-Origin %q on a public path: %v", got, public)
			}
		})
	}
}

// Fiber rejects an oversized body from its Content-Length, before any
// middleware runs and before reading the body; the answer still carries a
// request id and is counted like every other. The request goes out as
// headers alone: a client still writing a body the server will never read
// may meet a reset instead of the answer, which is TCP's doing, not ours.
func TestOversizedBodyHasARequestIDAndIsCounted(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	r := announceBody(t, e, "/v1/counters/big/increment", 70<<10)
	if r.Status != 413 || r.ErrorCode() != "payload_too_large" {
		t.Fatalf("got %d %s, want 413 payload_too_large", r.Status, r.Body)
	}
	if r.Header.Get("X-Request-ID") == "" {
		t.Error("no X-Request-ID")
	}
	want := `counters_http_requests_total{method="POST",route="unmatched",status="413"} 1`
	if m := e.Do(t, "GET", "/metrics", ""); !strings.Contains(string(m.Body), want) {
		t.Errorf("/metrics has no %s", want)
	}
}

// A counter's read carries an ETag; revalidating with it is 304 without a
// body until the counter changes.
func TestCounterReadRevalidatesWithETag(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	path := "/v1/counters/" + own() + "tagged"
	e.Do(t, "PUT", path, `{"value": 1}`)
	first := e.Do(t, "GET", path, "")
	tag := first.Header.Get("ETag")
	if first.Status != 200 || !strings.HasPrefix(tag, `"`) {
		t.Fatalf("got %d ETag %q, want 200 and a strong ETag", first.Status, tag)
	}
	for _, tc := range []struct {
		name, ifNoneMatch string
		status            int
	}{
		{"its own tag", tag, 304},
		{"weak form of its tag", "W/" + tag, 304},
		{"among others", `"other", ` + tag, 304},
		{"any", "*", 304},
		{"another tag", `"other"`, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do(t, "GET", path, "", "If-None-Match: "+tc.ifNoneMatch)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d", r.Status, tc.status)
			}
			if got := r.Header.Get("ETag"); got != tag {
				t.Errorf("ETag %q, want %q", got, tag)
			}
			if tc.status == 304 && len(r.Body) != 0 {
				t.Errorf("304 with a body: %s", r.Body)
			}
		})
	}
	e.Do(t, "POST", path+"/increment", "")
	r := e.Do(t, "GET", path, "", "If-None-Match: "+tag)
	if r.Status != 200 || r.Header.Get("ETag") == tag {
		t.Errorf("after a change: %d ETag %q, want 200 and a new tag", r.Status, r.Header.Get("ETag"))
	}
}

// The snippet is gzipped for clients that take gzip, plain for others, and
// each form revalidates with its own ETag.
func TestSnippetIsGzippedAndRevalidates(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	for _, tc := range []struct {
		name, acceptEncoding string
		gzipped              bool
	}{
		{"gzip", "gzip, deflate, br", true},
		{"gzip among weights", "br;q=1.0, gzip;q=0.8", true},
		{"identity only", "identity", false},
		{"gzip refused", "gzip;q=0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do(t, "GET", "/v1/snippet.js", "", "Accept-Encoding: "+tc.acceptEncoding)
			if r.Status != 200 {
				t.Fatalf("status %d", r.Status)
			}
			if got := r.Header.Get("Vary"); got != "Accept-Encoding" {
				t.Errorf("Vary %q", got)
			}
			body := r.Body
			if got := r.Header.Get("Content-Encoding") == "gzip"; got != tc.gzipped {
				t.Fatalf("gzipped %v, want %v", got, tc.gzipped)
			}
			if tc.gzipped {
				zr, err := gzip.NewReader(bytes.NewReader(r.Body))
				if err != nil {
					t.Fatal(err)
				}
				if body, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(body, app.SnippetJS) {
				t.Errorf("body is not the embedded snippet.js")
			}
			again := e.Do(t, "GET", "/v1/snippet.js", "", "Accept-Encoding: "+tc.acceptEncoding, "If-None-Match: "+r.Header.Get("ETag"))
			if again.Status != 304 || len(again.Body) != 0 {
				t.Errorf("revalidation: %d with %d bytes, want 304 without a body", again.Status, len(again.Body))
			}
		})
	}
}

// announceBody sends a POST's headers, announcing a body of n bytes, and
// reads the answer without sending the body: how a server refusing a body
// by its length is tested without racing TCP.
func announceBody(t *testing.T, e *apptest.Env, path string, n int) apptest.Response {
	t.Helper()
	return announceBodyTo(t, e, "POST", path, n)
}

// announceBodyTo is announceBody for any method, with headers ("Key:
// value") of its own.
func announceBodyTo(t *testing.T, e *apptest.Env, method, path string, n int, headers ...string) apptest.Response {
	t.Helper()
	req := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", method, path, n)
	for _, h := range headers {
		req += h + "\r\n"
	}
	return rawRequest(t, e, req+"\r\n")
}

// A JSON endpoint's body may come gzipped, and the body limit holds for it
// unzipped: a few KiB of gzip can unzip to gigabytes.
func TestGzippedBodiesKeepTheBodyLimit(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	path := "/v1/counters/" + own() + "zipped"
	bomb := gzipped(t, `{"by": 1, "pad": "`+strings.Repeat("x", 10<<20)+`"}`)
	for _, tc := range []struct {
		name, body, encoding string
		status               int
		code                 string
	}{
		{"gzipped", string(gzipped(t, `{"by": 2}`)), "gzip", 200, ""},
		{"unzips past the limit", string(bomb), "gzip", 413, "payload_too_large"},
		{"not gzip", `{"by": 1}`, "gzip", 400, "invalid_argument"},
		{"cut short", string(gzipped(t, `{"by": 1}`)[:12]), "gzip", 400, "invalid_argument"},
		{"unknown encoding", `{"by": 1}`, "br", 400, "invalid_argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do(t, "POST", path+"/increment", tc.body, "Content-Encoding: "+tc.encoding)
			if r.Status != tc.status || (tc.code != "" && r.ErrorCode() != tc.code) {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, tc.status, tc.code)
			}
		})
	}
	if r := e.Do(t, "GET", path, ""); !strings.Contains(string(r.Body), `"value":2`) {
		t.Errorf("after one gzipped increment by 2 and refusals: %s", r.Body)
	}
}

// rawRequest sends req, a whole HTTP/1.1 request as written on the wire,
// and reads the answer.
func rawRequest(t *testing.T, e *apptest.Env, req string) apptest.Response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return apptest.Response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// A body is JSON by its Content-Type, or has none: any other type is 415
// unsupported_media_type and changes nothing (curl -d sends a form's
// type: curl --json sends JSON's). A request without a body may say any
// type; an import has types of its own.
func TestBodiesThatAreNotJSONByTheirContentTypeAre415(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	p := own()
	for _, tc := range []struct {
		name, contentType, body string
		status                  int
	}{
		{"JSON", "application/json", `{"by": 1}`, 200},
		{"JSON with a charset", "application/json; charset=utf-8", `{"by": 1}`, 200},
		{"JSON in capitals", "Application/JSON", `{"by": 1}`, 200},
		{"a +json type", "application/merge-patch+json", `{"by": 1}`, 200},
		{"no type", "", `{"by": 1}`, 200},
		{"no body, any type", "text/plain", "", 200},
		{"a form (curl -d)", "application/x-www-form-urlencoded", `{"by": 1}`, 415},
		{"plain text", "text/plain", `{"by": 1}`, 415},
		{"a type that is not one", "json", `{"by": 1}`, 415},
		{"text that says json", "text/json+xml", `{"by": 1}`, 415},
	} {
		t.Run(tc.name, func(t *testing.T) {
			head := "POST /v1/counters/" + p + "typed/increment HTTP/1.1\r\nHost: test\r\n"
			if tc.contentType != "" {
				head += "Content-Type: " + tc.contentType + "\r\n"
			}
			before := e.Stored(t, p+"typed")
			r := rawRequest(t, e, head+fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(tc.body), tc.body))
			if r.Status != tc.status {
				t.Fatalf("got %d %s, want %d", r.Status, r.Body, tc.status)
			}
			if tc.status == 415 {
				if r.ErrorCode() != "unsupported_media_type" {
					t.Errorf("code %s, want unsupported_media_type", r.Body)
				}
				if after := e.Stored(t, p+"typed"); after != before {
					t.Errorf("a refused request changed the counter from %d to %d", before, after)
				}
			}
		})
	}
	ndjson := "{\"name\": \"" + p + "typed/imported\", \"value\": 3}\n"
	r := rawRequest(t, e, fmt.Sprintf("POST /v1/import HTTP/1.1\r\nHost: test\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n%s", len(ndjson), ndjson))
	if r.Status != 200 {
		t.Errorf("an import of application/x-ndjson: %d %s", r.Status, r.Body)
	}
}

// A request line whose target has a raw space or control character is
// 400 invalid_argument (RFC 9112 allows none there) and counts nothing:
// the space is not taken into the counter's name.
func TestRawSpacesInTheRequestTargetAre400(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	p := own()
	for _, tc := range []struct{ name, target string }{
		{"a space", "/v1/counters/bad name/increment"},
		{"a tab", "/v1/counters/bad\tname/increment"},
		{"a control character", "/v1/counters/bad\x01name/increment"},
		{"DEL", "/v1/counters/bad\x7fname/increment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rawRequest(t, e, "POST "+strings.Replace(tc.target, "/v1/counters/", "/v1/counters/"+p, 1)+" HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n")
			if r.Status != 400 || r.ErrorCode() != "invalid_argument" {
				t.Fatalf("got %d %s, want 400 invalid_argument", r.Status, r.Body)
			}
			if r.Header.Get("X-Request-ID") == "" {
				t.Error("no X-Request-ID")
			}
		})
	}
	if r := e.Do(t, "GET", "/v1/counters?prefix="+p+"bad", ""); !strings.Contains(string(r.Body), `"counters":[]`) {
		t.Errorf("a refused request made a counter: %s", r.Body)
	}
	if r := e.Do(t, "POST", "/v1/counters/"+p+"bad%20name/increment", ""); r.Status != 200 {
		t.Errorf("the percent-encoded name: %d %s", r.Status, r.Body)
	}
}
