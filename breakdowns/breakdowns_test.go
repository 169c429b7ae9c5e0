package breakdowns_test

import (
	"context"
	"math"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
)

// The breakdown's decisions without a database: what the store counted
// becomes rows that add up to the history's total. The labels' own rules
// (keys, values, the bound that makes "(other)") are the write path's;
// here "(other)" is one more value the store counted.

// fakeStore answers Counts from fixed counts and records what it was asked.
type fakeStore struct {
	values map[string]int64
	total  *big.Int
	err    error

	name, prefix, label string
	from, to            time.Time
}

func (f *fakeStore) Counts(_ context.Context, name, prefix, label string, from, to time.Time) (breakdowns.Counts, error) {
	f.name, f.prefix, f.label, f.from, f.to = name, prefix, label, from, to
	if f.err != nil {
		return breakdowns.Counts{}, f.err
	}
	values := map[string]*big.Int{}
	for v, n := range f.values {
		values[v] = big.NewInt(n)
	}
	return breakdowns.Counts{Values: values, Total: f.total}, nil
}

var now = time.Date(2026, 3, 10, 15, 4, 0, 0, time.UTC)

func clock() time.Time { return now }

func TestRowsAddUpToTheTotalWithNoneAndMore(t *testing.T) {
	tests := []struct {
		name     string
		by       string
		limit    int
		values   map[string]int64
		total    int64
		wantRows []breakdowns.Row
		wantMore int64
	}{
		{
			name:     "steps without the label are the (none) row",
			by:       "channel",
			limit:    20,
			values:   map[string]int64{"web": 5, "shop": 3},
			total:    10,
			wantRows: []breakdowns.Row{{Value: "web", Count: 5}, {Value: "shop", Count: 3}, {Value: "(none)", Count: 2}},
		},
		{
			name:     "a client's own (none) joins the row of unlabelled steps",
			by:       "channel",
			limit:    20,
			values:   map[string]int64{"(none)": 4, "web": 1},
			total:    8,
			wantRows: []breakdowns.Row{{Value: "(none)", Count: 7}, {Value: "web", Count: 1}},
		},
		{
			name:     "(other) is a row like any value",
			by:       "channel",
			limit:    20,
			values:   map[string]int64{"(other)": 6, "web": 2},
			total:    8,
			wantRows: []breakdowns.Row{{Value: "(other)", Count: 6}, {Value: "web", Count: 2}},
		},
		{
			name:     "rows of 0 are left out, (none) too when every step was labelled",
			by:       "channel",
			limit:    20,
			values:   map[string]int64{"web": 3, "gone": 0},
			total:    3,
			wantRows: []breakdowns.Row{{Value: "web", Count: 3}},
		},
		{
			name:     "ties are ordered by value",
			by:       "channel",
			limit:    20,
			values:   map[string]int64{"b": 2, "c": 2, "a": 2},
			total:    6,
			wantRows: []breakdowns.Row{{Value: "a", Count: 2}, {Value: "b", Count: 2}, {Value: "c", Count: 2}},
		},
		{
			name:     "beyond the limit the rest is More",
			by:       "channel",
			limit:    2,
			values:   map[string]int64{"a": 1, "b": 5, "c": 3, "d": 2},
			total:    11,
			wantRows: []breakdowns.Row{{Value: "b", Count: 5}, {Value: "c", Count: 3}},
			wantMore: 3,
		},
		{
			name:     "(none) takes its place among the top rows by its count",
			by:       "channel",
			limit:    1,
			values:   map[string]int64{"web": 2},
			total:    9,
			wantRows: []breakdowns.Row{{Value: "(none)", Count: 7}},
			wantMore: 2,
		},
		{
			name:     "negative steps count as they were made",
			by:       "channel",
			limit:    20,
			values:   map[string]int64{"refund": -4, "sale": 10},
			total:    6,
			wantRows: []breakdowns.Row{{Value: "sale", Count: 10}, {Value: "refund", Count: -4}},
		},
		{
			name:     "by name: one row a counter, no (none)",
			by:       breakdowns.ByName,
			limit:    20,
			values:   map[string]int64{"shop/a": 4, "shop/b": 1},
			total:    7,
			wantRows: []breakdowns.Row{{Value: "shop/a", Count: 4}, {Value: "shop/b", Count: 1}},
		},
		{
			name:   "nothing counted: no rows",
			by:     "channel",
			limit:  20,
			values: map[string]int64{},
			total:  0,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeStore{values: tc.values, total: big.NewInt(tc.total)}
			s := breakdowns.NewService(store, clock)
			b, err := s.Breakdown(context.Background(), breakdowns.Query{Name: "c", By: tc.by, Limit: tc.limit})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(b.Rows, tc.wantRows) || b.More != tc.wantMore || b.Total != tc.total {
				t.Fatalf("rows %v more %d total %d, want %v more %d total %d", b.Rows, b.More, b.Total, tc.wantRows, tc.wantMore, tc.total)
			}
			sum := b.More
			for _, r := range b.Rows {
				sum += r.Count
			}
			if tc.by != breakdowns.ByName && sum != b.Total {
				t.Errorf("rows and more add up to %d, the total is %d", sum, b.Total)
			}
		})
	}
}

func TestCountsBeyondInt64AreOutOfRange(t *testing.T) {
	huge := new(big.Int).Add(big.NewInt(math.MaxInt64), big.NewInt(1))
	tests := []struct {
		name   string
		by     string
		values map[string]int64
		total  *big.Int
		limit  int
	}{
		{"the total", "channel", map[string]int64{}, huge, 20},
		// (none) is 0 - 2·MaxInt64.
		{"a row", "channel", map[string]int64{"a": math.MaxInt64, "b": math.MaxInt64}, big.NewInt(0), 20},
		{"what is beyond the limit", breakdowns.ByName, map[string]int64{"a": math.MaxInt64, "b": math.MaxInt64, "c": math.MaxInt64}, big.NewInt(0), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeStore{values: tc.values, total: tc.total}
			_, err := breakdowns.NewService(store, clock).Breakdown(context.Background(), breakdowns.Query{Name: "c", By: tc.by, Limit: tc.limit})
			if got := counters.ErrorCode(err); got != counters.EOUTOFRANGE {
				t.Fatalf("error %v (code %q), want %s", err, got, counters.EOUTOFRANGE)
			}
		})
	}
}

func TestTheStoresErrorsPassThrough(t *testing.T) {
	want := counters.Errorf(counters.ENOTFOUND, "no such counter")
	_, err := breakdowns.NewService(&fakeStore{err: want}, clock).Breakdown(context.Background(), breakdowns.Query{Name: "c", By: "x", Limit: 1})
	if counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("error %v, want the store's ENOTFOUND", err)
	}
}

func TestParseWidensTheRangeToWholeUTCDays(t *testing.T) {
	day := func(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	tests := []struct {
		name     string
		req      breakdowns.Request
		from, to time.Time
		limit    int
	}{
		{
			name: "UTC dates are their own days, to exclusive",
			req:  breakdowns.Request{Name: "c", By: "channel", From: "2026-03-01", To: "2026-03-03"},
			from: day(2026, 3, 1), to: day(2026, 3, 3), limit: breakdowns.DefaultLimit,
		},
		{
			name: "a zone east of UTC starts the day before in UTC",
			req:  breakdowns.Request{Name: "c", By: "channel", Zone: "Asia/Tokyo", From: "2026-03-01", To: "2026-03-02"},
			from: day(2026, 2, 28), to: day(2026, 3, 2), limit: breakdowns.DefaultLimit,
		},
		{
			name: "a zone west of UTC ends the day after in UTC",
			req:  breakdowns.Request{Name: "c", By: "channel", Zone: "America/New_York", From: "2026-03-01", To: "2026-03-02", Limit: "5"},
			from: day(2026, 3, 1), to: day(2026, 3, 3), limit: 5,
		},
		{
			name: "a prefix by name",
			req:  breakdowns.Request{Prefix: "shop/", By: breakdowns.ByName, From: "2026-03-01", To: "2026-03-02", Limit: "1000"},
			from: day(2026, 3, 1), to: day(2026, 3, 2), limit: breakdowns.MaxLimit,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := breakdowns.NewService(&fakeStore{}, clock).Parse(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if !q.From.Equal(tc.from) || !q.To.Equal(tc.to) || q.Limit != tc.limit {
				t.Fatalf("[%v, %v) limit %d, want [%v, %v) limit %d", q.From, q.To, q.Limit, tc.from, tc.to, tc.limit)
			}
		})
	}
}

func TestParseRefusesBadQuestions(t *testing.T) {
	tests := []struct {
		name string
		req  breakdowns.Request
	}{
		{"no by", breakdowns.Request{Name: "c"}},
		{"a by that is no label key", breakdowns.Request{Name: "c", By: "no spaces allowed"}},
		{"a limit of 0", breakdowns.Request{Name: "c", By: "x", Limit: "0"}},
		{"a limit beyond the maximum", breakdowns.Request{Name: "c", By: "x", Limit: "1001"}},
		{"a limit that is no number", breakdowns.Request{Name: "c", By: "x", Limit: "ten"}},
		{"an unknown zone", breakdowns.Request{Name: "c", By: "x", Zone: "Mars/Olympus"}},
		{"a date that is no date", breakdowns.Request{Name: "c", By: "x", From: "yesterday"}},
		{"from after to", breakdowns.Request{Name: "c", By: "x", From: "2026-03-05", To: "2026-03-01"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := breakdowns.NewService(&fakeStore{}, clock).Parse(tc.req)
			if counters.ErrorCode(err) != counters.EINVALID || counters.ErrorMessage(err) == "" {
				t.Fatalf("error %v, want EINVALID with a message", err)
			}
		})
	}
}

// What Parse decided is what the store is asked.
func TestBreakdownAsksTheStoreForTheParsedRange(t *testing.T) {
	store := &fakeStore{values: map[string]int64{}, total: big.NewInt(0)}
	s := breakdowns.NewService(store, clock)
	q, err := s.Parse(breakdowns.Request{Prefix: "shop/", By: "channel", From: "2026-03-01", To: "2026-03-02"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Breakdown(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	if store.name != "" || store.prefix != "shop/" || store.label != "channel" || !store.from.Equal(q.From) || !store.to.Equal(q.To) {
		t.Fatalf("store asked %q %q %q [%v, %v), want the query's", store.name, store.prefix, store.label, store.from, store.to)
	}
}
