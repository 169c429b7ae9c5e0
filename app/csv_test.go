package app_test

import (
	"encoding/csv"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
)

// getCSV reads path as CSV and parses it with encoding/csv, which holds
// every record to the header's number of fields.
func getCSV(tb testing.TB, e *apptest.Env, path string, headers ...string) [][]string {
	tb.Helper()
	r := e.Do(tb, "GET", path, "", headers...)
	if r.Status != 200 {
		tb.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "text/csv; charset=utf-8" {
		tb.Fatalf("GET %s: Content-Type %q", path, ct)
	}
	records, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
	if err != nil {
		tb.Fatalf("GET %s: not CSV: %v\n%s", path, err, r.Body)
	}
	return records
}

// History, breakdowns and the export answer CSV for format=csv or an
// Accept that prefers text/csv: a header row, then a line per period
// (its start and end in the asked zone), per row, per counter; a
// prefix's history has the prefix in the name column, and a text a
// spreadsheet would take for a formula starts with '.
func TestHistoryBreakdownsAndTheExportAnswerCSVWhenAsked(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	p := uniquePrefix("csv")
	name := p + "Red, \"Horse\" Hill"
	e.Do(t, "POST", "/v1/counters/"+url.PathEscape(name)+"/increment", `{"by": 3, "labels": {"campaign": "=HYPERLINK(1)"}}`)
	e.Do(t, "POST", "/v1/counters/"+url.PathEscape(p+"b")+"/increment", `{"by": 2}`)
	hist := "/v1/counters/" + url.PathEscape(name) + "/history?step=day&from=2025-03-30&to=2025-04-01&tz=Europe/Berlin"

	for _, tc := range []struct {
		what, path string
		headers    []string
		want       [][]string
	}{
		{"history by format", hist + "&format=csv", nil, [][]string{
			{"name", "start", "end", "count"},
			{name, "2025-03-30T00:00:00+01:00", "2025-03-31T00:00:00+02:00", "0"},
			{name, "2025-03-31T00:00:00+02:00", "2025-04-01T00:00:00+02:00", "0"},
		}},
		{"history by Accept", hist, []string{"Accept: text/csv"}, [][]string{
			{"name", "start", "end", "count"},
			{name, "2025-03-30T00:00:00+01:00", "2025-03-31T00:00:00+02:00", "0"},
			{name, "2025-03-31T00:00:00+02:00", "2025-04-01T00:00:00+02:00", "0"},
		}},
		{"a prefix's history", "/v1/history?prefix=" + q(p) + "&step=month&from=2025-01&to=2025-03&format=csv", nil, [][]string{
			{"name", "start", "end", "count"},
			{p, "2025-01-01T00:00:00Z", "2025-02-01T00:00:00Z", "0"},
			{p, "2025-02-01T00:00:00Z", "2025-03-01T00:00:00Z", "0"},
		}},
		{"a breakdown", "/v1/breakdown?prefix=" + q(p) + "&by=campaign", []string{"Accept: text/csv;q=0.9, application/json;q=0.5"}, [][]string{
			{"value", "count"}, {"'=HYPERLINK(1)", "3"}, {"(none)", "2"},
		}},
		{"a breakdown by name", "/v1/breakdown?prefix=" + q(p) + "&by=name&format=csv", nil, [][]string{
			{"value", "count"}, {name, "3"}, {p + "b", "2"},
		}},
	} {
		if got := getCSV(t, e, tc.path, tc.headers...); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %q\nwant %q", tc.what, got, tc.want)
		}
	}

	export := getCSV(t, e, "/v1/export?prefix="+q(p)+"&format=csv")
	if len(export) != 3 || fmt.Sprint(export[0]) != "[name value created_at updated_at]" ||
		export[1][0] != name || export[1][1] != "3" || export[2][0] != p+"b" || export[2][1] != "2" || export[1][2] == "" {
		t.Fatalf("export: %q", export)
	}

	// format=json wins over Accept; an unknown format is 400.
	if r := e.Do(t, "GET", hist+"&format=json", "", "Accept: text/csv"); r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("format=json: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	for _, path := range []string{hist + "&format=xml", "/v1/export?prefix=" + q(p) + "&format=tsv", "/v1/breakdown?prefix=" + q(p) + "&by=name&format="} {
		if r := e.Do(t, "GET", path, ""); r.Status != 400 || r.ErrorCode() != "invalid_argument" {
			t.Errorf("%s: %d %s", path, r.Status, r.Body)
		}
	}
}

// The CSV export streams: more counters than one page of the store's
// reads come out in name order, each once.
func TestTheCSVExportStreamsEveryPage(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	p := uniquePrefix("csvpages")
	var lines []string
	for i := range 1100 {
		lines = append(lines, fmt.Sprintf(`{"name": "%sc%04d", "value": %d}`, p, i, i))
	}
	if r := e.Do(t, "POST", "/v1/import", strings.Join(lines, "\n")+"\n", "Content-Type: application/x-ndjson"); r.Status != 200 {
		t.Fatalf("import: %d %s", r.Status, r.Body)
	}
	records := getCSV(t, e, "/v1/export?prefix="+q(p), "Accept: text/csv")
	if len(records) != 1101 {
		t.Fatalf("%d records, want the header and 1100", len(records))
	}
	for i, rec := range records[1:] {
		if want := fmt.Sprintf("%sc%04d", p, i); rec[0] != want || rec[1] != fmt.Sprint(i) {
			t.Fatalf("record %d: %q, want %s", i+1, rec, want)
		}
	}
}
