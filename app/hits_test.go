package app_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"net/url"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/wire"
)

// svgText is what a badge shows: its <title> and the text of its <text>
// elements, and every element name, so tests can look for smuggled ones.
type svgText struct {
	title    string
	texts    []string
	elements map[string]bool
}

// parseBadge parses body as XML, failing the test if it is not a well-formed
// SVG document.
func parseBadge(tb testing.TB, body []byte) svgText {
	tb.Helper()
	out := svgText{elements: map[string]bool{}}
	dec := xml.NewDecoder(bytes.NewReader(body))
	var path []string
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		} else if err != nil {
			tb.Fatalf("badge is not XML: %v\n%s", err, body)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(path) == 0 && (t.Name.Local != "svg" || t.Name.Space != "http://www.w3.org/2000/svg") {
				tb.Fatalf("root element is %v, want svg", t.Name)
			}
			path = append(path, t.Name.Local)
			out.elements[t.Name.Local] = true
			if t.Name.Local == "text" {
				out.texts = append(out.texts, "")
			}
		case xml.EndElement:
			path = path[:len(path)-1]
		case xml.CharData:
			switch path[len(path)-1] {
			case "title":
				out.title += string(t)
			case "text":
				out.texts[len(out.texts)-1] += string(t)
			}
		}
	}
	return out
}

func (s svgText) shows(text string) bool {
	for _, t := range s.texts {
		if t == text {
			return true
		}
	}
	return false
}

func TestHitCountsAndAnswersTheValue(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	for want := int64(1); want <= 3; want++ {
		if got := env.Hit(t, "hits/docs/index.html"); got != want {
			t.Fatalf("hit %d answered %d", want, got)
		}
	}
	// Without Redis there is no de-duplication: every hit counted.
	if got := env.Stored(t, "hits/docs/index.html"); got != 3 {
		t.Fatalf("stored value %d, want 3", got)
	}
}

func TestHitBadgeCountsAndShowsLabelAndValue(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	env.Do(t, "PUT", "/v1/counters/hits%2Fbig", `{"value": 1233}`)
	tests := []struct {
		query, label, value string
	}{
		{"", "hits", "1234"},
		{"?label=views&format=comma&color=blue&label_color=555", "views", "1,235"},
		{"?label=&format=short", "", "1.2k"},
		{"?label=Besucher+%C3%BCberall&format=space", "Besucher überall", "1 237"},
	}
	for _, tc := range tests {
		res := env.Do(t, "GET", "/v1/hits/hits%2Fbig/badge.svg"+tc.query, "")
		if res.Status != 200 {
			t.Fatalf("%s: status %d, body %s", tc.query, res.Status, res.Body)
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, "image/svg+xml") {
			t.Errorf("%s: Content-Type %q", tc.query, ct)
		}
		svg := parseBadge(t, res.Body)
		if !svg.shows(tc.value) || (tc.label != "" && !svg.shows(tc.label)) {
			t.Errorf("%s: badge shows %q, want label %q and value %q", tc.query, svg.texts, tc.label, tc.value)
		}
		if tc.label == "" && svg.shows("hits") {
			t.Errorf("%s: empty label still shows %q", tc.query, svg.texts)
		}
	}
	if got := env.Stored(t, "hits/big"); got != 1237 {
		t.Fatalf("stored %d, want 1237: each badge counts one hit", got)
	}
}

func TestCounterBadgeShowsTheValueWithoutCounting(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	env.Do(t, "PUT", "/v1/counters/hits%2Fro", `{"value": 41}`)
	for range 2 {
		res := env.Do(t, "GET", "/v1/counters/hits%2Fro/badge.svg?label=readers", "")
		if res.Status != 200 {
			t.Fatalf("status %d, body %s", res.Status, res.Body)
		}
		if svg := parseBadge(t, res.Body); !svg.shows("41") || !svg.shows("readers") {
			t.Fatalf("badge shows %q", svg.texts)
		}
	}
	if got := env.Stored(t, "hits/ro"); got != 41 {
		t.Fatalf("stored %d after two read-only badges, want 41", got)
	}
	res := env.Do(t, "GET", "/v1/counters/hits%2Fmissing/badge.svg", "")
	if res.Status != 404 || res.ErrorCode() != "not_found" {
		t.Fatalf("missing counter: status %d, body %s", res.Status, res.Body)
	}
	if got := env.Stored(t, "hits/missing"); got != -1 {
		t.Fatalf("read-only badge created the counter (value %d)", got)
	}
}

// A label comes from whoever writes the URL: it must come out as text,
// never as markup, on the way through HTTP.
func TestBadgeLabelMarkupComesOutEscaped(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	labels := []string{
		"</text><script>alert(1)</script>",
		`"><svg onload="alert(1)">`,
		"<![CDATA[x]]>&amp;&#x3c;",
		"' onmouseover='alert(1)",
		"]]><foreignObject><iframe src=javascript:alert(1)>",
	}
	for _, label := range labels {
		for _, path := range []string{"/v1/hits/hits%2Fxss/badge.svg", "/v1/counters/hits%2Fxss/badge.svg"} {
			res := env.Do(t, "GET", path+"?label="+url.QueryEscape(label), "")
			if res.Status != 200 {
				t.Fatalf("%s %q: status %d, body %s", path, label, res.Status, res.Body)
			}
			svg := parseBadge(t, res.Body)
			if !svg.shows(label) {
				t.Errorf("%s: label %q drawn as %q", path, label, svg.texts)
			}
			for _, bad := range []string{"script", "foreignObject", "iframe"} {
				if svg.elements[bad] {
					t.Errorf("%s: label %q made a <%s> element", path, label, bad)
				}
			}
			if bytes.Contains(res.Body, []byte("<script")) || bytes.Contains(res.Body, []byte(`onload="`)) {
				t.Errorf("%s: raw markup of %q in body:\n%s", path, label, res.Body)
			}
		}
	}
}

func TestBadBadgeQueriesAreRefusedWithoutCounting(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	queries := []string{
		"label=" + strings.Repeat("x", 65),
		"label=a%01b",
		"label=%FF",
		"color=notacolour",
		"color=",
		"label_color=12345",
		"format=roman",
	}
	for _, q := range queries {
		for _, path := range []string{"/v1/hits/hits%2Fbad/badge.svg", "/v1/counters/hits%2Fbad/badge.svg"} {
			res := env.Do(t, "GET", path+"?"+q, "")
			if res.Status != 400 || res.ErrorCode() != "invalid_argument" {
				t.Errorf("%s?%s: status %d, body %s; want 400 invalid_argument", path, q, res.Status, res.Body)
			}
		}
	}
	if got := env.Stored(t, "hits/bad"); got != -1 {
		t.Fatalf("refused badges counted: value %d", got)
	}
}

func TestNamesOutsideThePublicPrefixesAreForbidden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prefixes []string
		name     string
		public   bool
	}{
		{nil, "hits/a", true},
		{nil, "books/Red Horse Hill", false},
		{nil, "_board/1", false},
		{nil, "hitsx", false},
		{nil, "Hits/a", false},
		{[]string{"pub/", "docs."}, "pub/a", true},
		{[]string{"pub/", "docs."}, "docs.example.com/", true},
		{[]string{"pub/", "docs."}, "hits/a", false},
	}
	for _, tc := range tests {
		// A token is set: without one a loopback client, as the tests
		// are, is served every private read, badges included.
		env := apptest.New(t, func(c *wire.Config) {
			c.Keys.AdminToken = "s3cret"
			if tc.prefixes != nil { // nil: the default
				c.Hits.PublicPrefixes = tc.prefixes
			}
		})
		env.Do(t, "PUT", "/v1/counters/"+url.PathEscape(tc.name), `{"value": 7}`, "Authorization: Bearer s3cret")
		before := env.Stored(t, tc.name) // reserved names cannot be PUT: -1
		esc := url.PathEscape(tc.name)
		// A hit on a private name is 403; a read-only badge of one is a
		// read without the token it needs: 401.
		for _, x := range []struct {
			path string
			want int
			code string
		}{
			{"/v1/hits/" + esc, 403, "permission_denied"},
			{"/v1/hits/" + esc + "/badge.svg", 403, "permission_denied"},
			{"/v1/counters/" + esc + "/badge.svg", 401, "unauthenticated"},
		} {
			res := env.Do(t, "GET", x.path, "")
			if tc.public {
				x.want, x.code = 200, ""
			}
			if res.Status != x.want {
				t.Errorf("prefixes %q, %s: status %d, want %d; body %s", tc.prefixes, x.path, res.Status, x.want, res.Body)
			}
			if x.code != "" && res.ErrorCode() != x.code {
				t.Errorf("%s: code %q, want %s", x.path, res.ErrorCode(), x.code)
			}
		}
		if !tc.public {
			if got := env.Stored(t, tc.name); got != before {
				t.Errorf("forbidden name %q changed to %d", tc.name, got)
			}
		}
	}
}

func TestSnippetIsServedAsCacheableJavaScript(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	res := env.Do(t, "GET", "/v1/snippet.js", "")
	if res.Status != 200 {
		t.Fatalf("status %d", res.Status)
	}
	if got, want := res.Header.Get("Content-Type"), "application/javascript; charset=utf-8"; got != want {
		t.Errorf("Content-Type %q, want %q", got, want)
	}
	if got := res.Header.Get("Cache-Control"); !strings.Contains(got, "max-age=300") {
		t.Errorf("Cache-Control %q, want a short max-age", got)
	}
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Errorf("Access-Control-Allow-Origin %q", got)
	}
	if !bytes.Equal(res.Body, app.SnippetJS) {
		t.Errorf("body is not the embedded snippet.js")
	}
}

// Every answer of the public endpoints, errors included, may be read by any
// page and must not be cached; preflights are answered.
func TestPublicAnswersCarryCORSAndNoStore(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	env.Do(t, "PUT", "/v1/counters/hits%2Fc", `{"value": 1}`)
	tests := []struct {
		path   string
		status int
	}{
		{"/v1/hits/hits%2Fc", 200},
		{"/v1/hits/hits%2Fc/badge.svg", 200},
		{"/v1/counters/hits%2Fc/badge.svg", 200},
		{"/v1/hits/private", 403},
		{"/v1/hits/hits%2Fc/badge.svg?format=roman", 400},
		{"/v1/counters/hits%2Fnone/badge.svg", 404},
		{"/v1/hits/hits%2F%00", 400},
	}
	for _, tc := range tests {
		res := env.Do(t, "GET", tc.path, "", "Origin: https://blog.example")
		if res.Status != tc.status {
			t.Errorf("%s: status %d, want %d", tc.path, res.Status, tc.status)
		}
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("%s: Access-Control-Allow-Origin %q, want *", tc.path, got)
		}
		if got := res.Header.Get("Access-Control-Allow-Credentials"); got != "" {
			t.Errorf("%s: Access-Control-Allow-Credentials %q", tc.path, got)
		}
		if got := res.Header.Get("Cache-Control"); got != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", tc.path, got)
		}
		// Also without an Origin header (an <img>, curl): same headers.
		if got := env.Do(t, "GET", tc.path, "").Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("%s without Origin: Access-Control-Allow-Origin %q", tc.path, got)
		}
	}

	for _, path := range []string{"/v1/hits/hits%2Fc", "/v1/hits/hits%2Fc/badge.svg", "/v1/counters/hits%2Fc/badge.svg", "/v1/snippet.js"} {
		res := env.Do(t, "OPTIONS", path, "", "Origin: https://blog.example",
			"Access-Control-Request-Method: GET", "Access-Control-Request-Headers: x-requested-with")
		if res.Status != 204 {
			t.Errorf("preflight %s: status %d, body %s", path, res.Status, res.Body)
		}
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("preflight %s: Access-Control-Allow-Origin %q", path, got)
		}
		if got := res.Header.Get("Access-Control-Allow-Methods"); !strings.Contains(got, "GET") {
			t.Errorf("preflight %s: Access-Control-Allow-Methods %q", path, got)
		}
		if plain := env.Do(t, "OPTIONS", path, ""); plain.Status != 204 || !strings.Contains(plain.Header.Get("Allow"), "GET") {
			t.Errorf("OPTIONS %s: status %d, Allow %q", path, plain.Status, plain.Header.Get("Allow"))
		}
	}
	if got := env.Stored(t, "hits/c"); got != 5 {
		t.Errorf("stored %d, want 5: 1 + two hits and two hit badges; preflights count nothing", got)
	}
}

func TestPublicEndpointsNeedNoTokenWhilePrivateOnesDo(t *testing.T) {
	t.Parallel()
	const token = "s3cret"
	env := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = token })
	auth := "Authorization: Bearer " + token
	if res := env.Do(t, "PUT", "/v1/counters/hits%2Ft", `{"value": 5}`, auth); res.Status != 201 {
		t.Fatalf("PUT with token: %d %s", res.Status, res.Body)
	}
	for _, path := range []string{"/v1/hits/hits%2Ft", "/v1/hits/hits%2Ft/badge.svg", "/v1/counters/hits%2Ft/badge.svg", "/v1/snippet.js"} {
		if res := env.Do(t, "GET", path, ""); res.Status != 200 {
			t.Errorf("%s without token: status %d, body %s", path, res.Status, res.Body)
		}
	}
	private := []struct{ method, path, body string }{
		{"GET", "/v1/counters/hits%2Ft", ""},
		{"GET", "/v1/counters?prefix=hits%2F", ""},
		{"POST", "/v1/counters/hits%2Ft/increment", ""},
		{"PUT", "/v1/counters/hits%2Ft", `{"value": 0}`},
		{"DELETE", "/v1/counters/hits%2Ft", ""},
	}
	for _, p := range private {
		if res := env.Do(t, p.method, p.path, p.body); res.Status != 401 || res.ErrorCode() != "unauthenticated" {
			t.Errorf("%s %s without token: status %d, body %s", p.method, p.path, res.Status, res.Body)
		}
	}
	res := env.Do(t, "GET", "/v1/counters/hits%2Ft", "", auth)
	var ctr struct{ Value int64 }
	res.Decode(t, &ctr)
	if res.Status != 200 || ctr.Value != 7 {
		t.Fatalf("with token: status %d, value %d; want 200 and 7", res.Status, ctr.Value)
	}
}

func TestHitRefusesABadName(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	for _, path := range []string{"/v1/hits/hits%2F%00", "/v1/hits/hits%2F" + strings.Repeat("a", 300), "/v1/hits/%E2%28"} {
		if res := env.Do(t, "GET", path, ""); res.Status != 400 || res.ErrorCode() != "invalid_argument" {
			t.Errorf("%s: status %d, body %s", path[:min(len(path), 40)], res.Status, res.Body)
		}
	}
}

// Link checkers probe badge URLs with HEAD; that is no page view.
func TestHeadRequestsDoNotCount(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	for _, path := range []string{"/v1/hits/hits%2Fhead", "/v1/hits/hits%2Fhead/badge.svg"} {
		if res := env.Do(t, "HEAD", path, ""); res.Status != 200 {
			t.Fatalf("HEAD %s: status %d", path, res.Status)
		}
	}
	if got := env.Stored(t, "hits/head"); got != -1 {
		t.Fatalf("HEAD created the counter with value %d", got)
	}
	if got := env.Hit(t, "hits/head"); got != 1 {
		t.Fatalf("first GET answered %d, want 1", got)
	}
}
