package app_test

import (
	"context"
	"fmt"
	"html"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/geoip/geoiptest"
	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

var (
	dashboardRow = regexp.MustCompile(`<tr[^>]*><td>([^<]*)</td><td class="value">([^<]*)</td></tr>`)
	dashboardBar = regexp.MustCompile(`data-start="([^"]+)" data-count="(-?\d+)"`)
)

// bars are the (start, count) pairs of the chart inside the element id.
func bars(tb testing.TB, dom, id string) []string {
	tb.Helper()
	i := strings.Index(dom, `id="`+id+`"`)
	if i < 0 {
		tb.Fatalf("no #%s in the DOM:\n%s", id, dom)
	}
	chart := dom[i:]
	if end := strings.Index(chart, "</svg>"); end >= 0 {
		chart = chart[:end]
	}
	var out []string
	for _, m := range dashboardBar.FindAllStringSubmatch(chart, -1) {
		out = append(out, m[1]+"="+m[2])
	}
	return out
}

// The dashboard, in a real browser: it lists the prefix's counters with
// their values and draws the first one's history and the prefix's summed
// history, point for point what the API answers. A screenshot of it is
// kept (its path is logged).
func dashboardListsCountersAndDrawsTheirHistoryInABrowser(t *testing.T) {
	e := apptest.New(t, patient)
	berlin, _ := time.LoadLocation("Europe/Berlin")
	clock := testenv.NewClock(time.Now())
	e.Store.Now = clock.Now
	for day, steps := range map[int]map[string]int{1: {"a": 3, "b": 1}, 2: {"a": 5}, 4: {"a": -2, "b": 7}, 7: {"b": 2}} {
		clock.Set(time.Date(2025, 4, day, 12, 0, 0, 0, berlin))
		for name, by := range steps {
			e.Do(t, "POST", fmt.Sprintf("/v1/counters/shop%%2F%s/increment?by=%d", name, by), "")
		}
	}
	clock.Set(time.Now())
	e.Do(t, "POST", "/v1/counters/other/increment", "")

	const q = "step=day&tz=Europe/Berlin&from=2025-04-01&to=2025-04-08"
	shown := dashboard(t, e.URL+"/dashboard?prefix=shop/&"+q, 1280, 800)
	dom := shown.dom()

	var rows []string
	for _, m := range dashboardRow.FindAllStringSubmatch(dom, -1) {
		rows = append(rows, m[1]+"="+m[2])
	}
	if got, want := strings.Join(rows, " "), "shop/a=6 shop/b=10"; got != want {
		t.Errorf("listed %q, want %q; DOM:\n%s", got, want, dom)
	}
	for _, tc := range []struct{ chart, api string }{
		{"counter-chart", "/v1/counters/shop%2Fa/history?" + q},
		{"prefix-chart", "/v1/history?prefix=shop/&" + q},
	} {
		s := getHistory(t, e, tc.api)
		var want []string
		for _, p := range s.Points {
			want = append(want, p.Start.In(berlin).Format(time.RFC3339)+"="+fmt.Sprint(p.Count))
		}
		if got := bars(t, dom, tc.chart); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s draws %v, the API answers %v", tc.chart, got, want)
		}
	}

	t.Logf("screenshot of the dashboard: %s", screenshot(t, shown, "dashboard.png"))
}

// screenshot saves a PNG of the tab where shotPath says, and returns
// its path.
func screenshot(tb testing.TB, page *tab, name string) string {
	tb.Helper()
	shot, err := filepath.Abs(shotPath(tb, name))
	if err != nil {
		tb.Fatal(err)
	}
	page.screenshot(shot)
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		tb.Fatalf("no screenshot at %s: %v", shot, err)
	}
	return shot
}

// The dashboard's files carry a policy that lets the page run only its own
// script and talk only to this service; other paths under it are 404.
func TestDashboardIsServedWithAStrictPolicy(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	for _, tc := range []struct {
		path, contentType string
		status            int
	}{
		{"/dashboard", "text/html", 200},
		{"/dashboard/dashboard.js", "javascript", 200},
		{"/dashboard/dashboard.css", "text/css", 200},
		{"/dashboard/../go.mod", "", 404},
		{"/dashboard/nothing.js", "", 404},
	} {
		r := e.Do(t, "GET", tc.path, "")
		if r.Status != tc.status || !strings.Contains(r.Header.Get("Content-Type"), tc.contentType) {
			t.Errorf("%s: %d %s, want %d %s", tc.path, r.Status, r.Header.Get("Content-Type"), tc.status, tc.contentType)
		}
		if tc.status == 200 && !strings.Contains(r.Header.Get("Content-Security-Policy"), "script-src 'self'") {
			t.Errorf("%s: policy %q", tc.path, r.Header.Get("Content-Security-Policy"))
		}
	}
}

var (
	dashboardBreakdownRow = regexp.MustCompile(`<tr data-value="([^"]*)" data-count="(\d+)">`)
	dashboardFigure       = regexp.MustCompile(`id="(hits|visitors)-card".*?<div class="figure" data-value="(\d*)">`)
)

// section is the DOM of the element id up to its end tag.
func section(tb testing.TB, dom, id string) string {
	tb.Helper()
	i := strings.Index(dom, `id="`+id+`"`)
	if i < 0 {
		tb.Fatalf("no #%s in the DOM:\n%s", id, dom)
	}
	s := dom[i:]
	if end := strings.Index(s, "</section>"); end >= 0 {
		s = s[:end]
	}
	return s
}

// shownRows are the (value, count) rows of the breakdown table #bd-by.
func shownRows(tb testing.TB, dom, by string) string {
	tb.Helper()
	var out []string
	for _, m := range dashboardBreakdownRow.FindAllStringSubmatch(section(tb, dom, "bd-"+by), -1) {
		out = append(out, html.UnescapeString(m[1])+"="+m[2])
	}
	return strings.Join(out, " ")
}

// apiRows are the rows of a breakdown as the API answers it.
func apiRows(tb testing.TB, e *apptest.Env, path string) string {
	tb.Helper()
	res := e.Do(tb, "GET", path, "")
	if res.Status != 200 {
		tb.Fatalf("%s: %d %s", path, res.Status, res.Body)
	}
	var b struct {
		Rows []struct {
			Value string
			Count int64
		}
	}
	res.Decode(tb, &b)
	var out []string
	for _, r := range b.Rows {
		out = append(out, fmt.Sprintf("%s=%d", r.Value, r.Count))
	}
	return strings.Join(out, " ")
}

// The dashboard's report, in a real browser: for a site (a prefix of page
// hits) over the last 7 days, its hits and visitors, and its top pages,
// referrers, countries, browsers, systems, devices and campaigns, each
// row what the breakdown API answers for the same range; for a shop's
// prefix, the same by a label of its own. A screenshot is kept (its path
// is logged) for the guide.
func dashboardReportsWhereHitsCameFromInABrowser(t *testing.T) {
	e := apptest.New(t, patient, func(c *wire.Config) {
		c.HTTP.TrustedProxies = []string{"127.0.0.1"}
		c.Hits.GeoIPDB = geoiptest.File(t, geoiptest.LocationDB, map[string]string{
			"198.51.100.0/24": "DE", "203.0.113.0/24": "FR", "2001:db8::/32": "NZ"})
	})
	const site = "https://blog.example.org"
	agents := []string{agentChromeWindows, agentSafariIPhone, agentFirefoxLinux, agentSafariIPhone, agentChromeWindows, agentGooglebot}
	refs := []string{"https://news.ycombinator.com/item?id=1", "", "https://www.google.com/", "https://news.ycombinator.com/", site + "/", "https://mastodon.social/@x"}
	addrs := []string{"198.51.100.1", "198.51.100.2", "203.0.113.3", "2001:db8::4", "198.51.100.5", "192.0.2.6"}
	for i := range 12 {
		page := []string{"hits/site/", "hits/site/about", "hits/site/posts/launch"}[i%3]
		q := "ref=" + url.QueryEscape(refs[i%len(refs)])
		if i%4 == 0 {
			q += "&utm_source=newsletter&utm_medium=email&utm_campaign=spring"
		}
		e.Do(t, "GET", "/v1/hits/"+url.PathEscape(page)+"?"+q, "", "X-Forwarded-For: "+addrs[i%len(addrs)],
			"User-Agent: "+agents[i%len(agents)], "Origin: "+site, "Referer: "+site+"/x")
	}
	for _, sale := range []string{`{"by": 3, "labels": {"channel": "web", "region": "EU"}}`, `{"by": 1, "labels": {"channel": "store"}}`, `{"by": 2}`} {
		e.Do(t, "POST", "/v1/counters/shop%2Fbook-1/increment", sale, "Content-Type: application/json")
	}
	if err := e.Visitors.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}

	today := time.Now().UTC()
	rng := "from=" + today.AddDate(0, 0, -6).Format(time.DateOnly) + "&to=" + today.AddDate(0, 0, 1).Format(time.DateOnly) + "&tz=UTC"
	shown := dashboard(t, e.URL+"/dashboard?prefix=hits/site/&period=7d&tz=UTC", 1280, 1100)
	dom := shown.dom()

	figures := map[string]string{}
	for _, m := range dashboardFigure.FindAllStringSubmatch(dom, -1) {
		figures[m[1]] = m[2]
	}
	var hist struct {
		Total  int64
		Points []struct{ Visitors int64 }
	}
	e.Do(t, "GET", "/v1/history?prefix=hits/site/&step=day&"+rng, "").Decode(t, &hist)
	var visitors int64
	for _, p := range hist.Points {
		visitors += p.Visitors
	}
	if got, want := figures["hits"], fmt.Sprint(hist.Total); got != want || want != "12" {
		t.Errorf("the hits card shows %q, want %q (12)", got, want)
	}
	if got, want := figures["visitors"], fmt.Sprint(visitors); got != want {
		t.Errorf("the visitors card shows %q, want %q", got, want)
	}
	for _, by := range []string{"name", "referrer", "country", "browser", "os", "device", "source", "campaign"} {
		want := apiRows(t, e, "/v1/breakdown?prefix=hits/site/&by="+by+"&limit=10&"+rng)
		if got := shownRows(t, dom, by); got != want || want == "" {
			t.Errorf("%s: the dashboard shows %q, the API answers %q", by, got, want)
		}
	}
	if got := bars(t, dom, "report-chart"); len(got) != 7 {
		t.Errorf("the report's chart has %d bars, want the 7 days: %v", len(got), got)
	}

	shop := dashboard(t, e.URL+"/dashboard?prefix=shop/&period=today&tz=UTC&label=channel", 1280, 800).dom()
	if got, want := shownRows(t, shop, "custom"), "web=3 (none)=2 store=1"; got != want {
		t.Errorf("the shop by channel: the dashboard shows %q, want %q", got, want)
	}

	if !strings.Contains(dom, `<small class="credit">IP Geolocation by <a rel="noopener" href="https://db-ip.com">DB-IP</a></small>`) {
		t.Errorf("with a country database loaded, the countries are not credited; DOM:\n%s", section(t, dom, "bd-country"))
	}

	t.Logf("screenshot of the report: %s", screenshot(t, shown, "breakdowns-page-hits.png"))
}
