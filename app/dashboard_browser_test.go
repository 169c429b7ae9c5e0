package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
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
func TestDashboardListsCountersAndDrawsTheirHistoryInABrowser(t *testing.T) {
	e := apptest.New(t)
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
	page := e.URL + "/dashboard?prefix=shop/&" + q
	dom := renderedDOM(t, page)

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

	dir, err := os.MkdirTemp("", "countersvc-dashboard-")
	if err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "dashboard.png")
	chromium(t, "--screenshot="+shot, "--window-size=1280,800", "--hide-scrollbars", page)
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot of the dashboard: %s", shot)
}

// The dashboard's files carry a policy that lets the page run only its own
// script and talk only to this service; other paths under it are 404.
func TestDashboardIsServedWithAStrictPolicy(t *testing.T) {
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
