package app_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// EnvDocsScreenshots=1 writes the dashboard tests' screenshots that the
// guides show (the PNGs of docs/) over them; otherwise, and for the
// others, they go to a temporary directory.
const EnvDocsScreenshots = "COUNTERS_TEST_DOCS_SCREENSHOTS"

// shotPath is where a screenshot named name goes (see EnvDocsScreenshots).
func shotPath(tb testing.TB, name string) string {
	tb.Helper()
	doc := filepath.Join("..", "docs", name)
	if _, err := os.Stat(doc); err == nil && os.Getenv(EnvDocsScreenshots) == "1" {
		return doc
	}
	return filepath.Join(tb.TempDir(), name)
}

// patient gives MySQL calls 15 s: a page's requests come at once, as do
// the many writers of the concurrency tests, and on a machine shared with
// other work 3 s were seen to pass (a 503, not what these tests look at).
func patient(c *wire.Config) { c.MySQL.Timeout = 15 * time.Second }

// glanceRow is what the first page shows of one site or shop.
type glanceRow struct {
	Prefix, Today, Total, Previous string
	Bars                           int
}

// glanceRows reads the first page's rows back.
func glanceRows(t *tab) []glanceRow {
	var rows []glanceRow
	t.eval(`Array.from(document.querySelectorAll('#glance-table tbody tr')).map(tr => ({
		Prefix: tr.dataset.prefix, Today: tr.dataset.today, Total: tr.dataset.total, Previous: tr.dataset.previous,
		Bars: tr.querySelectorAll('svg.spark rect').length}))`, &rows)
	return rows
}

// dayCounts puts counts on days before today (0 is today), as
// increments committed then.
func dayCounts(t *testing.T, e *apptest.Env, clock *testenv.Clock, counts map[string]map[int]int) {
	t.Helper()
	now := time.Now().UTC()
	for name, days := range counts {
		for ago, by := range days {
			clock.Set(now.AddDate(0, 0, -ago))
			e.Do(t, "POST", "/v1/counters/"+url.PathEscape(name)+fmt.Sprintf("/increment?by=%d", by), "")
		}
	}
	clock.Set(now)
}

// The first page of the dashboard, in a real browser, lists every site
// (a prefix under the public hits/ prefix, one per host) and shop (a
// top-level prefix) with today's count and the last 30 days' against the
// 30 before, as the history API sums them, and a sparkline of the 30
// days; never the service's own _tickets/ names. A click on a row opens
// today's view of that prefix, with the page-hit panels of a site.
func dashboardGlanceListsEverySiteAndOpensTodaysView(t *testing.T) {
	e := apptest.New(t, patient)
	clock := testenv.NewClock(time.Now())
	e.Store.Now = clock.Now
	dayCounts(t, e, clock, map[string]map[int]int{
		"hits/blog.example.org/":       {0: 2, 3: 5, 40: 4},
		"hits/blog.example.org/about":  {0: 1, 12: 1},
		"hits/docs.example.org/intro":  {45: 7},
		"shop/Bulldozer":               {1: 3, 31: 2},
		"shop/Red Horse Hill":          {0: 1},
		"downloads":                    {0: 9},
		"hits/docs.example.org/setup/": {2: 1},
	})
	e.Do(t, "POST", "/v1/boards", `{"company_id": 1, "slug": "NINJA", "title": "Ninja"}`)
	e.Do(t, "POST", "/v1/boards/1/tickets", `{"title": "A ticket"}`) // _tickets/... names

	b := startDevtools(t)
	page := b.open(e.URL+"/dashboard?tz=UTC", 1100, 700)
	page.dashboardReady()

	today := time.Now().UTC().Format(time.DateOnly)
	sum := func(prefix, from, to string) string {
		var s struct{ Total int64 }
		e.Do(t, "GET", "/v1/history?prefix="+url.QueryEscape(prefix)+"&step=day&tz=UTC&from="+from+"&to="+to, "").Decode(t, &s)
		return fmt.Sprint(s.Total)
	}
	day := func(ago int) string { return time.Now().UTC().AddDate(0, 0, -ago).Format(time.DateOnly) }
	var want []glanceRow
	for _, p := range []string{"downloads", "hits/blog.example.org/", "hits/docs.example.org/", "shop/"} {
		want = append(want, glanceRow{Prefix: p, Today: sum(p, today, day(-1)), Total: sum(p, day(29), day(-1)), Previous: sum(p, day(59), day(29)), Bars: 30})
	}
	if got := glanceRows(page); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the first page shows\n%v\nthe history API sums\n%v", got, want)
	}
	if want[1].Today != "3" || want[1].Total != "9" || want[1].Previous != "4" || want[3].Total != "4" || want[3].Previous != "2" {
		t.Errorf("the seeded counts are not where the test put them: %v", want)
	}
	if shown := page.text(`document.querySelector('#glance-table').innerText`); strings.Contains(shown, "_tickets") {
		t.Errorf("the first page lists the reserved names:\n%s", shown)
	}
	page.screenshot(shotPath(t, "dashboard-glance.png"))

	// A click anywhere on the row opens today's view of the prefix.
	page.eval(`document.querySelector('#glance-table tr[data-prefix="hits/blog.example.org/"] td:nth-child(3)').click()`, nil)
	page.waitFor("today's view of the site", `location.search.includes('period=today') && document.documentElement.hasAttribute('data-ready')`)
	var view struct {
		Prefix, Title, Hits string
		Bars                int
		Referrers, Glance   bool
	}
	page.eval(`({Prefix: document.getElementById('prefix').value, Title: document.getElementById('report-title').textContent,
		Hits: document.querySelector('#hits-card .figure').dataset.value,
		Bars: document.querySelectorAll('#report-chart rect.bar').length,
		Referrers: !document.getElementById('bd-referrer').hidden, Glance: !document.getElementById('glance').hidden})`, &view)
	if view.Prefix != "hits/blog.example.org/" || !strings.Contains(view.Title, "today") || view.Hits != "3" || view.Bars != 24 || !view.Referrers || view.Glance {
		t.Errorf("the click opened %+v, want today's view of hits/blog.example.org/: 3 hits in 24 hours, its referrers", view)
	}
}

// With a token required and no key typed, the dashboard says once that
// it needs one, and asks nothing else; with the key typed it shows the
// first page.
func dashboardAsksOnceForAKey(t *testing.T) {
	e := apptest.New(t, patient, func(c *wire.Config) { c.Keys.AdminToken = "s3cret" })
	e.Do(t, "POST", "/v1/counters/shop%2Fa/increment", "", bearerOf("s3cret"))
	for _, path := range []string{"/dashboard", "/dashboard?prefix=shop/&period=7d"} {
		b := startDevtools(t)
		page := b.open(e.URL+path, 1100, 500)
		page.dashboardReady()
		var shown struct {
			SignIn, Error, Body string
			Hidden              bool
		}
		page.eval(`({SignIn: document.getElementById('signin').hidden ? '' : document.getElementById('signin').textContent,
			Error: document.getElementById('error').textContent, Body: document.body.innerText,
			Hidden: document.getElementById('glance').hidden && document.getElementById('view').hidden})`, &shown)
		if !strings.HasPrefix(shown.SignIn, "Sign in: this service needs an API key.") || shown.Error != "" || strings.Contains(shown.Body, "401") || !shown.Hidden {
			t.Errorf("%s without a key shows %+v, want one sign-in message and nothing else", path, shown)
		}
		page.eval(`document.getElementById('key').value = 's3cret'; document.getElementById('key-form').requestSubmit()`, nil)
		page.waitFor("the view once the key is typed", `document.getElementById('signin').hidden && document.documentElement.hasAttribute('data-ready') && (!document.getElementById('glance').hidden || !document.getElementById('view').hidden)`)
		if errs := page.text(`document.getElementById('error').textContent`); errs != "" {
			t.Errorf("%s with the key: %s", path, errs)
		}
	}
}

// A shop's prefix gets the panels that fit it: its count (not "Hits"),
// its top counters, and the labels its owner broke it down by before, not
// the page-hit panels; and no country credit is shown for a site when no
// country database is loaded (every country is unknown).
func dashboardShowsWhatFitsThePrefix(t *testing.T) {
	e := apptest.New(t, patient)
	for _, sale := range []string{`{"by": 3, "labels": {"channel": "web", "region": "EU"}}`, `{"by": 1, "labels": {"channel": "store", "region": "US"}}`} {
		e.Do(t, "POST", "/v1/counters/shop%2Fbook-1/increment", sale, "Content-Type: application/json")
	}
	e.Hit(t, "hits/site/")

	b := startDevtools(t)
	page := b.open(e.URL+"/dashboard?prefix=shop/&period=7d&tz=UTC&label=region", 1100, 900)
	page.dashboardReady()
	// Without a label typed, the shop's view keeps the one asked for before.
	page.navigate(e.URL + "/dashboard?prefix=shop/&period=7d&tz=UTC")
	page.dashboardReady()
	type panels struct {
		Card                string
		Visitors, Referrers bool
		Top                 string
		Labels              []string
		Rows                string
		Credit              bool
	}
	read := func() panels {
		var p panels
		page.eval(`({Card: document.querySelector('#hits-card .what').textContent.trim(),
			Visitors: !document.getElementById('visitors-card').hidden, Referrers: !document.getElementById('bd-referrer').hidden,
			Top: document.querySelector('#bd-name .title').textContent,
			Labels: Array.from(document.querySelectorAll('#bd-labels section')).map(s => s.id),
			Rows: Array.from(document.querySelectorAll('#bd-labels tr[data-value]')).map(r => r.dataset.value + '=' + r.dataset.count).join(' '),
			Credit: !document.querySelector('#bd-country .credit').hidden})`, &p)
		return p
	}
	if got, want := read(), (panels{Card: "Count", Top: "Top counters", Labels: []string{"bd-label-region"}, Rows: "EU=3 US=1"}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the shop's view: %+v, want %+v", got, want)
	}
	page.screenshot(shotPath(t, "dashboard-shop.png"))

	page.navigate(e.URL + "/dashboard?prefix=hits/site/&period=7d&tz=UTC")
	page.dashboardReady()
	if got := read(); got.Card != "Hits" || !got.Visitors || !got.Referrers || got.Top != "Top pages" || len(got.Labels) != 0 || got.Credit {
		t.Errorf("the site's view without a country database: %+v, want the page-hit panels and no credit", got)
	}
}

// Own visits, in a real browser: a page of a site opened with
// #counters:ignore=true sets the flag for that site and is not counted,
// nor is any later visit of that browser (the value still shows), until
// #counters:ignore=false. The dashboard's first page links to both for a
// site named after its host, and its switch sets the flag for its own
// origin.
func ownVisitsAreNotCountedOnceTheBrowserOptsOut(t *testing.T) {
	e := apptest.New(t, patient)
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>post</title></head><body>
<p>Viewed <span id="views" data-counter-value>…</span> times.</p>
<script async src="%s/v1/snippet.js"></script>
</body></html>`, e.URL)
	}))
	t.Cleanup(site.Close)
	host := strings.TrimPrefix(site.URL, "http://")
	name := "hits/" + host + "/post"

	b := startDevtools(t)
	page := b.open(site.URL+"/post", 800, 400)
	shown := func(what, want string) {
		t.Helper()
		page.waitFor(what+": the page shows "+want, `document.getElementById('views').textContent === '`+want+`'`)
	}
	shown("a first visit", "1")

	dash := b.open(e.URL+"/dashboard?tz=UTC", 1100, 900)
	dash.dashboardReady()
	var links []string
	dash.eval(`Array.from(document.querySelectorAll('#ignore-links a')).map(a => a.href)`, &links)
	optOut, optIn := site.URL+"/#counters:ignore=true", site.URL+"/#counters:ignore=false"
	if fmt.Sprint(links) != fmt.Sprint([]string{optOut, optIn}) {
		t.Fatalf("the dashboard links to %v, want %v", links, []string{optOut, optIn})
	}
	dash.eval(`document.getElementById('ignore-switch').click()`, nil)
	if got := dash.text(`localStorage.getItem('counters:ignore')`); got != "true" {
		t.Errorf("the switch left counters:ignore = %q for the dashboard's origin, want true", got)
	}
	dash.eval(`document.getElementById('ignore-switch').click()`, nil)
	if got := dash.text(`localStorage.getItem('counters:ignore')`); got != "" {
		t.Errorf("the switch, turned off, left counters:ignore = %q", got)
	}

	steps := []struct {
		what, url, shows string
		stored           int64
	}{
		{"the dashboard's opt-out link", strings.Replace(optOut, "/#", "/post#", 1), "1", 1},
		{"a later visit", site.URL + "/post", "1", 1},
		{"the opt-in link", strings.Replace(optIn, "/#", "/post#", 1), "2", 2},
		{"a visit after it", site.URL + "/post", "3", 3},
	}
	for _, s := range steps {
		page.navigate(s.url)
		shown(s.what, s.shows)
		if got := e.Stored(t, name); got != s.stored {
			t.Errorf("after %s, %s is %d, want %d", s.what, name, got, s.stored)
		}
	}
	if d := b.Dialogs(); len(d) != 2 || !strings.Contains(d[0], "no longer counted") || !strings.Contains(d[1], "counted again") {
		t.Errorf("the pages told %q, want the opt-out and the opt-in confirmed", d)
	}
}

// The dashboard's charts, in a real browser, draw the annotations of
// their range over the bar of their day, the text on hover; and "download
// CSV" saves what the view shows, the same query as CSV, fetched with the
// key typed into the page (the service needs a token here).
func dashboardDrawsAnnotationsAndDownloadsCSV(t *testing.T) {
	const token = "s3cret"
	e := apptest.New(t, patient, func(c *wire.Config) { c.Keys.AdminToken = token })
	clock := testenv.NewClock(time.Now())
	e.Store.Now = clock.Now
	now := time.Now().UTC()
	for ago, by := range map[int]int{0: 2, 2: 5, 4: 1} {
		clock.Set(now.AddDate(0, 0, -ago))
		for _, book := range []string{"shop%2FBulldozer", "shop%2FRed%20Horse%20Hill"} {
			e.Do(t, "POST", fmt.Sprintf("/v1/counters/%s/increment?by=%d", book, by), "", bearerOf(token))
		}
	}
	clock.Set(now)
	cut := time.Date(now.Year(), now.Month(), now.Day()-2, 9, 30, 0, 0, time.UTC)
	if r := e.Do(t, "POST", "/v1/annotations", fmt.Sprintf(`{"prefix": "shop/", "at": %q, "text": "Price cut to 9.99"}`, cut.Format(time.RFC3339)),
		bearerOf(token), "Content-Type: application/json"); r.Status != 201 {
		t.Fatalf("POST /v1/annotations: %d %s", r.Status, r.Body)
	}

	b := startDevtools(t)
	downloads := t.TempDir()
	b.downloadsTo(downloads)
	page := b.open(e.URL+"/dashboard?prefix=shop/&period=7d&tz=UTC", 1100, 720)
	page.dashboardReady()
	page.eval(`document.getElementById('key').value = '`+token+`'; document.getElementById('key-form').requestSubmit()`, nil)
	page.waitFor("the view with the key", `document.getElementById('signin').hidden && document.querySelector('#report-chart g.annotation')`)
	page.dashboardReady()

	var marker struct {
		At, Text, Title string
		OnItsBar        bool
	}
	page.eval(`(() => {
		const g = document.querySelector('#report-chart g.annotation'), x = +g.querySelector('line').getAttribute('x1');
		const bar = document.querySelector('#report-chart rect.bar[data-start^="`+cut.Format(time.DateOnly)+`"]');
		return {At: g.dataset.at, Text: g.dataset.text, Title: g.querySelector('title').textContent,
			OnItsBar: x > +bar.getAttribute('x') && x < +bar.getAttribute('x') + +bar.getAttribute('width')};
	})()`, &marker)
	if marker.Text != "Price cut to 9.99" || !marker.OnItsBar || marker.Title != cut.Format(time.DateOnly)+": Price cut to 9.99" {
		t.Errorf("the chart's marker: %+v, want the price cut over the bar of %s", marker, cut.Format(time.DateOnly))
	}
	if n := page.text(`document.querySelectorAll('#counter-chart g.annotation').length`); n != "1" {
		t.Errorf("the counter's chart draws %s markers, want the prefix's one", n)
	}
	page.screenshot(shotPath(t, "dashboard-annotations.png"))

	for _, link := range []string{"#report-csv", "#bd-name a.csv"} {
		var a struct{ Href, File string }
		page.eval(`(a => ({Href: a.href, File: a.getAttribute('download')}))(document.querySelector('`+link+`'))`, &a)
		page.eval(`document.querySelector('`+link+`').click()`, nil)
		saved := filepath.Join(downloads, a.File)
		var got []byte
		for deadline := time.Now().Add(cdpWait); ; time.Sleep(50 * time.Millisecond) {
			if b, err := os.ReadFile(saved); err == nil && len(b) > 0 {
				got = b
				break
			}
			if time.Now().After(deadline) {
				entries, _ := os.ReadDir(downloads)
				t.Fatalf("%s: no %s saved within %s (the folder holds %v; the page says %q)", link, a.File, cdpWait, entries, page.text(`document.getElementById('error').textContent`))
			}
		}
		want := e.Do(t, "GET", strings.TrimPrefix(a.Href, e.URL), "", bearerOf(token))
		if want.Status != 200 || !strings.HasPrefix(want.Header.Get("Content-Type"), "text/csv") || string(got) != string(want.Body) {
			t.Errorf("%s saved %s:\n%s\nthe API answers %d %s:\n%s", link, a.File, got, want.Status, want.Header.Get("Content-Type"), want.Body)
		}
	}
}
