package app_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/wire"
)

type breakdownBody struct {
	Name, Prefix, By, TZ string
	From, To             time.Time
	Total                int64
	Rows                 []struct {
		Value string
		Count int64
	}
	More int64
}

func getBreakdown(tb testing.TB, e *apptest.Env, path string, headers ...string) breakdownBody {
	tb.Helper()
	r := e.Do(tb, "GET", path, "", headers...)
	if r.Status != 200 {
		tb.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
	}
	var b breakdownBody
	r.Decode(tb, &b)
	return b
}

// rowSum is what the rows and more add up to.
func (b breakdownBody) rowSum() int64 {
	n := b.More
	for _, r := range b.Rows {
		n += r.Count
	}
	return n
}

// Labels that break the rules are 400 and change nothing: the counter is
// not even created, by a single increment, a batch item or an idempotent
// request.
func TestInvalidLabelsAre400AndChangeNothing(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	p := own()
	tooMany := make([]string, 9)
	for i := range tooMany {
		tooMany[i] = fmt.Sprintf(`"k%d": "v"`, i)
	}
	tests := []struct {
		name   string
		labels string
	}{
		{"nine labels", "{" + strings.Join(tooMany, ", ") + "}"},
		{"a key with a capital", `{"Channel": "web"}`},
		{"a key with a dash", `{"sales-channel": "web"}`},
		{"an empty key", `{"": "web"}`},
		{"a key of 33 characters", `{"` + strings.Repeat("k", 33) + `": "web"}`},
		{"an empty value", `{"channel": ""}`},
		{"a value of 129 bytes", `{"channel": "` + strings.Repeat("é", 64) + `x"}`},
		{"a control character", `{"channel": "web\u0007"}`},
		{"a line break", `{"channel": "web\nshop"}`},
		{"a number", `{"channel": 7}`},
		{"null", `null`},
		{"a list", `["web"]`},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := fmt.Sprintf("%sbad%d", p, i)
			requests := []struct {
				path, body string
				headers    []string
			}{
				{"/v1/counters/" + name + "/increment", `{"by": 2, "labels": ` + tt.labels + `}`, nil},
				{"/v1/counters/" + name + "/increment", `{"labels": ` + tt.labels + `}`, []string{"Idempotency-Key: " + name}},
				{"/v1/counters/batch", `{"increments": [{"name": "` + name + `x", "by": 1}, {"name": "` + name + `", "by": 1, "labels": ` + tt.labels + `}]}`, nil},
			}
			for _, req := range requests {
				r := e.Do(t, "POST", req.path, req.body, req.headers...)
				if r.Status != 400 || r.ErrorCode() != "invalid_argument" {
					t.Errorf("POST %s %s: %d %s, want 400 invalid_argument", req.path, req.body, r.Status, r.Body)
				}
			}
			for _, n := range []string{name, name + "x"} {
				if r := e.Do(t, "GET", "/v1/counters/"+n, ""); r.Status != 404 {
					t.Errorf("GET %s after the refusals: %d %s, want 404", n, r.Status, r.Body)
				}
			}
		})
	}
}

// Exact under concurrency: 16 writers send labelled increments (single,
// batch items, idempotent, some without labels, some negative) at one
// counter; the breakdown by every label adds up to the history's count,
// to the acknowledged steps and to the sum of what was answered. The race
// is in the 16 requests in flight at once; 30 each (60 before) still send
// every kind five times a writer.
func TestConcurrentLabelledIncrementsAddUpToTheHistory(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, patient) // no 503: the deadline is not what it looks at
	const writers, each = 16, 30
	channels := []string{"web", "shop", "app"}
	regions := []string{"EU", "US"}
	var acked atomic.Int64
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 33))
			for i := range each {
				by := rng.Int64N(9) - 2
				labels := fmt.Sprintf(`{"channel": %q, "region": %q}`, channels[rng.IntN(3)], regions[rng.IntN(2)])
				switch rng.IntN(5) {
				case 0:
					labels = `{"channel": "` + channels[rng.IntN(3)] + `"}` // no region
				case 1:
					labels = "" // no labels at all
				}
				body := fmt.Sprintf(`{"by": %d}`, by)
				if labels != "" {
					body = fmt.Sprintf(`{"by": %d, "labels": %s}`, by, labels)
				}
				path, headers := "/v1/counters/shop%2Fbook/increment", []string(nil)
				switch i % 6 {
				case 1:
					path = "/v1/counters/batch"
					body = `{"increments": [` + strings.Replace(body, "{", `{"name": "shop/book", `, 1) + `]}`
				case 2:
					headers = []string{fmt.Sprintf("Idempotency-Key: w%d-%d", w, i)}
				}
				for range 1 + len(headers) { // a keyed request is sent twice
					r, err := e.TryDo("POST", path, body, headers...)
					if err != nil {
						t.Error(err)
						return
					}
					if r.Status != 200 {
						t.Errorf("POST %s %s: %d %s", path, body, r.Status, r.Body)
						return
					}
					if r.Header.Get("Idempotent-Replayed") == "" {
						acked.Add(by)
					}
				}
			}
		}(w)
	}
	wg.Wait()
	h := getHistory(t, e, "/v1/counters/shop%2Fbook/history")
	if h.Total != acked.Load() {
		t.Fatalf("history counts %d, the acknowledged steps add up to %d", h.Total, acked.Load())
	}
	for _, by := range []string{"channel", "region"} {
		b := getBreakdown(t, e, "/v1/counters/shop%2Fbook/breakdown?by="+by)
		if b.Total != h.Total || b.rowSum() != h.Total {
			t.Errorf("by %s: total %d, rows and more %d; the history counts %d (%+v)", by, b.Total, b.rowSum(), h.Total, b.Rows)
		}
	}
}

// The answer: rows by count descending then value, at most limit, more
// for the rest, "(none)" for steps without the label, the range widened
// to whole UTC days, and by=name per counter under a prefix.
func TestBreakdownAnswersRowsByCountThenValue(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	p := own()
	for _, req := range []string{
		`{"by": 5, "labels": {"channel": "web"}}`,
		`{"by": 3, "labels": {"channel": "shop"}}`,
		`{"by": 3, "labels": {"channel": "app"}}`,
		`{"by": 1, "labels": {"region": "EU"}}`,
		`{"by": 2}`,
	} {
		e.Do(t, "POST", "/v1/counters/"+p+"sales%2Fa/increment", req)
	}
	e.Do(t, "POST", "/v1/counters/batch", `{"increments": [{"name": "`+p+`sales/b", "by": 4, "labels": {"channel": "web"}}, {"name": "`+p+`salesx", "by": 50, "labels": {"channel": "web"}}]}`)
	type row struct {
		value string
		count int64
	}
	today := time.Now().UTC().Truncate(24 * time.Hour)
	tests := []struct {
		path  string
		rows  []row
		more  int64
		total int64
	}{
		{"/v1/counters/" + p + "sales%2Fa/breakdown?by=channel", []row{{"web", 5}, {"(none)", 3}, {"app", 3}, {"shop", 3}}, 0, 14},
		{"/v1/counters/" + p + "sales%2Fa/breakdown?by=channel&limit=2", []row{{"web", 5}, {"(none)", 3}}, 6, 14},
		{"/v1/counters/" + p + "sales%2Fa/breakdown?by=region", []row{{"(none)", 13}, {"EU", 1}}, 0, 14},
		{"/v1/breakdown?prefix=" + p + "sales/&by=channel", []row{{"web", 9}, {"(none)", 3}, {"app", 3}, {"shop", 3}}, 0, 18},
		{"/v1/breakdown?prefix=" + p + "sales/&by=name", []row{{p + "sales/a", 14}, {p + "sales/b", 4}}, 0, 18},
		{"/v1/counters/" + p + "sales%2Fa/breakdown?by=channel&from=2020-01-01&to=2020-02-01", nil, 0, 0},
		// A sum, not a series: more days than a history answers at once.
		{"/v1/counters/" + p + "sales%2Fa/breakdown?by=channel&from=" + today.AddDate(-5, 0, 0).Format(time.DateOnly), []row{{"web", 5}, {"(none)", 3}, {"app", 3}, {"shop", 3}}, 0, 14},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			b := getBreakdown(t, e, tt.path)
			var got []row
			for _, r := range b.Rows {
				got = append(got, row{r.Value, r.Count})
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.rows) || b.More != tt.more || b.Total != tt.total {
				t.Fatalf("rows %v, more %d, total %d; want %v, %d, %d", got, b.More, b.Total, tt.rows, tt.more, tt.total)
			}
		})
	}
	// Berlin's day starts at 22:00 or 23:00 UTC the day before: the answer
	// widens it to the UTC days that hold it, and says so.
	b := getBreakdown(t, e, "/v1/counters/"+p+"sales%2Fa/breakdown?by=channel&tz=Europe/Berlin&from="+today.Format(time.DateOnly)+"&to="+today.AddDate(0, 0, 1).Format(time.DateOnly))
	if !b.From.Equal(today.AddDate(0, 0, -1)) || !b.To.Equal(today.AddDate(0, 0, 1)) || b.TZ != "Europe/Berlin" || b.Total != 14 {
		t.Fatalf("from %v to %v tz %s total %d; want the UTC days %v to %v, total 14", b.From, b.To, b.TZ, b.Total, today.AddDate(0, 0, -1), today.AddDate(0, 0, 1))
	}
	if r := e.Do(t, "GET", "/v1/counters/"+p+"nothing/breakdown?by=channel", ""); r.Status != 404 {
		t.Fatalf("a counter with neither value nor history: %d %s", r.Status, r.Body)
	}
}

// Keys: a read key reads the breakdowns of its prefixes only; labelling
// takes a write key of the name; public breakdowns need none.
func TestBreakdownsAreScopedByKeys(t *testing.T) {
	t.Parallel()
	e := apptest.New(t)
	reader := bearerOf(createKey(t, e, `{"name": "r", "scopes": ["read"], "prefixes": ["shop/"]}`).Secret)
	writer := bearerOf(createKey(t, e, `{"name": "w", "scopes": ["write"], "prefixes": ["shop/"]}`).Secret)
	labelled := `{"labels": {"channel": "web"}}`
	e.Do(t, "POST", "/v1/counters/other/increment", labelled)
	e.Do(t, "GET", "/v1/hits/hits%2Fpage", "")
	tests := []struct {
		name, method, path, body string
		headers                  []string
		want                     int
	}{
		{"a write key labels its names", "POST", "/v1/counters/shop%2Fa/increment", labelled, []string{writer}, 200},
		{"a write key labels no other names", "POST", "/v1/counters/other/increment", labelled, []string{writer}, 403},
		{"a read key does not label", "POST", "/v1/counters/shop%2Fa/increment", labelled, []string{reader}, 403},
		{"a read key reads its counters' breakdowns", "GET", "/v1/counters/shop%2Fa/breakdown?by=channel", "", []string{reader}, 200},
		{"a read key reads its prefix's", "GET", "/v1/breakdown?prefix=shop/&by=name", "", []string{reader}, 200},
		{"a read key reads a prefix within its own", "GET", "/v1/breakdown?prefix=shop/books/&by=channel", "", []string{reader}, 200},
		{"a read key reads no other counter's", "GET", "/v1/counters/other/breakdown?by=channel", "", []string{reader}, 403},
		{"a read key reads no wider prefix", "GET", "/v1/breakdown?prefix=sh&by=channel", "", []string{reader}, 403},
		{"a public counter's needs no key", "GET", "/v1/hits/hits%2Fpage/breakdown?by=referrer", "", nil, 200},
		{"a public prefix's needs no key", "GET", "/v1/hits/breakdown?prefix=hits/&by=name", "", nil, 200},
		{"a private counter is not public", "GET", "/v1/hits/other/breakdown?by=channel", "", nil, 403},
		{"a private prefix is not public", "GET", "/v1/hits/breakdown?prefix=o&by=channel", "", nil, 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := e.Do(t, tt.method, tt.path, tt.body, tt.headers...); r.Status != tt.want {
				t.Fatalf("%s %s: %d %s, want %d", tt.method, tt.path, r.Status, r.Body, tt.want)
			}
		})
	}
	if r := e.Do(t, "GET", "/v1/hits/hits%2Fpage/breakdown?by=referrer", ""); r.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Fatalf("a public breakdown without CORS: %v", r.Header)
	}
}

// Breakdowns off: labels are still checked, then dropped; the increment
// counts as an unlabelled one, and the breakdown routes are not served.
func TestBreakdownsOffDropLabelsAndServeNoBreakdowns(t *testing.T) {
	t.Parallel()
	e := apptest.New(t, func(c *wire.Config) { c.Breakdowns.On = false })
	if r := e.Do(t, "POST", "/v1/counters/a/increment", `{"by": 2, "labels": {"channel": "web"}}`); r.Status != 200 {
		t.Fatalf("a labelled increment: %d %s", r.Status, r.Body)
	}
	if r := e.Do(t, "POST", "/v1/counters/a/increment", `{"labels": {"Channel": "web"}}`); r.Status != 400 {
		t.Fatalf("a bad label: %d %s, want 400", r.Status, r.Body)
	}
	if r := e.Do(t, "GET", "/v1/counters/a/breakdown?by=channel", ""); r.Status != 404 {
		t.Fatalf("the breakdown: %d %s, want 404 (not served)", r.Status, r.Body)
	}
	var n int
	if err := e.DB.QueryRow("SELECT COUNT(*) FROM counter_label").Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d label rows (%v), want none", n, err)
	}
}
