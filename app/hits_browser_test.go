package app_test

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
)

// EnvNoBrowser=1 skips the browser test on machines without Chromium;
// scripts/test installs it, so there the test fails rather than skips.
const EnvNoBrowser = "COUNTERS_TEST_NO_BROWSER"

// chromiumBinary is the browser's path, once the test holds a browser
// slot; the test is skipped when EnvNoBrowser says there is none. Debian's
// chromium-headless-shell (Chromium's headless build, without GTK or
// systemd: what scripts/test installs where there is no chromium) does.
func chromiumBinary(tb testing.TB) string {
	tb.Helper()
	if os.Getenv(EnvNoBrowser) == "1" {
		tb.Skipf("%s=1: browser test skipped", EnvNoBrowser)
	}
	bin, err := exec.LookPath("chromium")
	if err != nil {
		bin, err = exec.LookPath("chromium-headless-shell")
	}
	if err != nil {
		tb.Fatalf("chromium is not installed (scripts/test installs chromium-headless-shell; set %s=1 to skip): %v", EnvNoBrowser, err)
	}
	browserSlot(tb)
	return bin
}

var shownValue = regexp.MustCompile(`<span id="views"[^>]*>([^<]*)</span>`)

// The snippet, loaded by a real browser from a page on another origin,
// counts a hit through CORS and writes the value into the page.
func snippetCountsAndShowsTheValueInABrowser(t *testing.T) {
	env := apptest.New(t)
	env.Do(t, "PUT", "/v1/counters/hits%2Fbrowser", `{"value": 1233}`)

	// A page on another origin (another port), like a blog that embeds the
	// snippet. Its script tag points at the service.
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attrs := ""
		if name := r.URL.Query().Get("name"); name != "" {
			attrs = fmt.Sprintf(` data-name="%s"`, html.EscapeString(name))
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>blog</title></head><body>
<p>Viewed <span id="views" data-counter-value data-format="comma">…</span> times.</p>
<script async src="%s/v1/snippet.js"%s></script>
</body></html>`, env.URL, attrs)
	}))
	t.Cleanup(page.Close)
	pageURL, _ := url.Parse(page.URL)

	tests := []struct {
		path, counter, shown string
	}{
		{"/post.html?name=hits/browser", "hits/browser", "1,234"},
		// Without data-name: "hits/" + the page's host and path.
		{"/docs/index.html", "hits/" + pageURL.Host + "/docs/index.html", "1"},
	}
	for _, tc := range tests {
		dom := renderedDOM(t, page.URL+tc.path)
		m := shownValue.FindStringSubmatch(dom)
		if m == nil || m[1] != tc.shown {
			t.Fatalf("%s: page shows %q, want %q; DOM:\n%s", tc.path, m, tc.shown, dom)
		}
		var want int64
		fmt.Sscan(strings.ReplaceAll(tc.shown, ",", ""), &want)
		if got := env.Stored(t, tc.counter); got != want {
			t.Errorf("%s: %s stored %d, want %d", tc.path, tc.counter, got, want)
		}
	}
}

// The snippet, in a real browser, tells the service where the visitor came
// from: ref is the page's document.referrer (here the page on another
// host that linked to it), and the page URL's utm_source, utm_medium and
// utm_campaign are passed on, its other query values are not.
func snippetSendsTheReferrerAndCampaignInABrowser(t *testing.T) {
	env := apptest.New(t)
	// The service behind a recording proxy: the snippet sends its hit
	// wherever its own script came from.
	target, _ := url.Parse(env.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	hitQueries := make(chan url.Values, 10)
	service := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/v1/hits/") {
			hitQueries <- r.URL.Query()
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(service.Close)

	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path == "/link" {
			// Another site (localhost, not 127.0.0.1) that links to the
			// post: a script navigation, so that the post has a referrer.
			fmt.Fprintf(w, `<!DOCTYPE html><script>location.href = %q;</script>`, r.URL.Query().Get("to"))
			return
		}
		fmt.Fprintf(w, `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>post</title></head><body>
<p>Viewed <span id="views" data-counter-value>…</span> times.</p>
<script async src="%s/v1/snippet.js" data-name="hits/post"></script>
</body></html>`, service.URL)
	}))
	t.Cleanup(page.Close)
	pageURL, _ := url.Parse(page.URL)
	post := page.URL + "/post.html?utm_source=news%20letter&utm_medium=email&utm_campaign=launch&session=secret-42"
	linker := "http://localhost:" + pageURL.Port() + "/link?to=" + url.QueryEscape(post)

	dom := renderedDOM(t, linker)
	if m := shownValue.FindStringSubmatch(dom); m == nil || m[1] != "1" {
		t.Fatalf("the post shows %q, want 1; DOM:\n%s", m, dom)
	}
	var q url.Values
	select {
	case q = <-hitQueries:
	default:
		t.Fatal("the service saw no hit")
	}
	want := url.Values{
		"ref":          {"http://localhost:" + pageURL.Port() + "/"}, // cross-origin: the browser sends the origin only
		"utm_source":   {"news letter"},
		"utm_medium":   {"email"},
		"utm_campaign": {"launch"},
	}
	if q.Encode() != want.Encode() {
		t.Errorf("the hit's query is %v, want %v", q, want)
	}
}
