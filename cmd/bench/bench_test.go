package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestMedianIsOneMeasuredRunWithEveryRunsBadAnswers(t *testing.T) {
	rs := runs{
		{RPS: 300, P50: time.Millisecond, Bad: 1},
		{RPS: 100, P50: 3 * time.Millisecond},
		{RPS: 200, P50: 2 * time.Millisecond, Bad: 2},
		{RPS: 400, P50: 4 * time.Millisecond},
	}
	if got, want := rs.byRPS(), (load{RPS: 300, P50: time.Millisecond, Bad: 3}); got != want {
		t.Fatalf("byRPS() = %+v, want %+v", got, want)
	}
	if got, want := rs.byP50(), (load{RPS: 100, P50: 3 * time.Millisecond, Bad: 3}); got != want {
		t.Fatalf("byP50() = %+v, want %+v", got, want)
	}
	if got, want := rs[0].RPS, 300.0; got != want {
		t.Fatalf("the runs were reordered: first is %v, want %v", got, want)
	}
}

func TestPercentile(t *testing.T) {
	var xs []int
	for i := 100; i >= 1; i-- {
		xs = append(xs, i)
	}
	self := func(x int) int { return x }
	for _, tc := range []struct{ p, want int }{{0, 1}, {50, 51}, {99, 100}, {100, 100}} {
		if got := percentile(xs, tc.p, self); got != tc.want {
			t.Errorf("percentile(1..100, %d) = %d, want %d", tc.p, got, tc.want)
		}
	}
	if got, want := median([]int{7}, self), 7; got != want {
		t.Fatalf("median of one = %d, want %d", got, want)
	}
}

func TestAlternateRunsEachMeasurementInTurn(t *testing.T) {
	var order []string
	m := func(name string) func() (load, error) {
		return func() (load, error) { order = append(order, name); return load{}, nil }
	}
	rs, err := alternate(2, m("a"), m("b"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(order, ""), "abab"; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	if len(rs) != 2 || len(rs[0]) != 2 || len(rs[1]) != 2 {
		t.Fatalf("runs %v, want two of two", rs)
	}
}

func TestCompareCountingReportsWhatTheSeriesGrewBy(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Load()
		fmt.Fprintf(w, "# HELP counters_hits_limit_errors_total ...\n"+
			"counters_hits_limit_errors_total{limit=\"dedup\"} %d\n"+
			"counters_hits_limit_errors_total{limit=\"rate_limit\"} %d\n"+
			"counters_hits_limit_errors_total_other 1000\n"+
			"counters_cache_hits_total{view=\"counter\"} %d\n"+
			"counters_cache_hits_total{view=\"list\"} 500\n", n, 2*n, n)
	}))
	defer srv.Close()
	b := &bench{config: config{reps: 2}, client: srv.Client()}
	hits.Store(10)
	grow := measure{"grow", func(time.Duration) (load, error) { hits.Add(5); return load{}, nil }}
	_, grown, err := b.compareCounting(srv.URL, []string{"counters_hits_limit_errors_total", `counters_cache_hits_total{view="counter"}`}, grow)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(grown), "[30 10]"; got != want {
		t.Fatalf("grown %s, want %s", got, want)
	}
}

func TestScenariosRunInTheirOwnOrder(t *testing.T) {
	c, _, err := parseFlags([]string{"-scenario", "rss, tickets,hot"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range c.scenarios {
		names = append(names, s.name)
	}
	if got, want := strings.Join(names, ","), "hot,tickets,rss"; got != want {
		t.Fatalf("scenarios %s, want %s", got, want)
	}
	if _, _, err := parseFlags([]string{"-scenario", "hot,cold"}); err == nil || !strings.Contains(err.Error(), `"cold"`) {
		t.Fatalf("an unknown scenario: err %v, want one naming it", err)
	}
	c, _, err = parseFlags([]string{"-scenario", "read,hits,latency"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(c.needs(), ","), "nocoalesce,nocache,nolimits,nobreakdowns"; got != want {
		t.Fatalf("needs %s, want %s", got, want)
	}
	if err := c.check(); err == nil || !strings.Contains(err.Error(), "-url-nolimits") {
		t.Fatalf("check without the instances: %v, want an error naming -url-nolimits", err)
	}
	// The cost of a page hit with the limits on means little without the
	// same hit's with them off beside it.
	c, _, err = parseFlags([]string{"-scenario", "cost"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(c.needs(), ","), "nolimits"; got != want {
		t.Fatalf("cost needs %s, want %s", got, want)
	}
}

func TestWrkDurationIsWholeSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{1500 * time.Millisecond, "2s"},
		{time.Second, "1s"},
		{4 * time.Second, "4s"},
		{100 * time.Millisecond, "1s"},
		{90 * time.Second, "90s"},
	} {
		if got := wrkDuration(tc.d); got != tc.want {
			t.Errorf("wrkDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}
