package history_test

// The history service over in-memory stores: what it asks the store, how it
// sums what it gets, and what it adds of visitors. storage/ proves the
// MySQL side (history_test.go there).

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
)

// quarters is an in-memory history: what was added at each quarter hour.
type quarters struct {
	at    map[time.Time]int64
	err   error
	asked [2]time.Time // the last [from, to) asked for
}

func (q *quarters) HistoryDays(_ context.Context, _, _ string, from, to time.Time) ([]history.UTCDay, error) {
	return q.days(from, to, nil)
}

func (q *quarters) days(from, to time.Time, inside func(time.Time) bool) ([]history.UTCDay, error) {
	q.asked = [2]time.Time{from, to}
	if q.err != nil {
		return nil, q.err
	}
	var out []history.UTCDay
	for day := from; day.Before(to); day = day.AddDate(0, 0, 1) {
		d := history.UTCDay{Date: day}
		var any bool
		for t, n := range q.at {
			if dd, qi := history.QuarterOf(t); dd.Equal(day) {
				if inside != nil && !inside(day) {
					qi = 0 // the day as one figure, in its first quarter
				}
				d.Quarters[qi] += n
				any = true
			}
		}
		if any {
			out = append(out, d)
		}
	}
	return out, nil
}

// spans is quarters as a Spanner: days no period starts inside come whole.
type spans struct {
	*quarters
	whole int // days given as one figure
}

func (s *spans) HistorySpans(_ context.Context, _, _ string, from, to time.Time, inside func(time.Time) bool) ([]history.UTCDay, error) {
	days, err := s.days(from, to, inside)
	for _, d := range days {
		if !inside(d.Date) {
			s.whole++
		}
	}
	return days, err
}

// visitorDays answers every UTC day with its day of the month, so that a
// point shows which day it was given.
type visitorDays struct{ calls int }

func (v *visitorDays) Days(_ context.Context, _, _ string, from, to time.Time) (map[time.Time]int64, error) {
	v.calls++
	out := map[time.Time]int64{}
	for d := from; d.Before(to); d = d.AddDate(0, 0, 1) {
		out[d] = int64(d.Day())
	}
	return out, nil
}

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// Each period counts the quarter hours that start in it, zeros included,
// in the query's zone; a store that gives whole days as one figure (a
// Spanner) gives the same answer as one that gives every quarter.
func TestSeriesSumsQuartersIntoThePeriodsOfItsZone(t *testing.T) {
	added := map[time.Time]int64{
		at("2025-03-29T22:59:59Z"): 0,  // nothing, no point
		at("2025-03-29T23:00:00Z"): 1,  // Berlin: 00:00 on the 30th (CET)
		at("2025-03-30T00:45:00Z"): 2,  // 01:45 CET
		at("2025-03-30T01:00:00Z"): 4,  // 03:00 CEST: the hour 02:00 never was
		at("2025-03-30T21:59:00Z"): 8,  // 23:59 CEST, still the 30th
		at("2025-03-30T22:00:00Z"): 16, // the 31st
		at("2025-04-15T12:00:00Z"): 32, // April
		at("2025-03-28T12:00:00Z"): 64, // before the days' range, in March
	}
	now := func() time.Time { return at("2025-05-01T00:00:00Z") }
	tests := []struct {
		name  string
		req   history.Request
		want  []int64
		total int64
	}{
		{"days in Berlin across the spring change", history.Request{Name: "a", Zone: "Europe/Berlin", From: "2025-03-30", To: "2025-04-01"}, []int64{15, 16}, 31},
		{"hours in Berlin: 23 on the day of the change", history.Request{Name: "a", Step: "hour", Zone: "Europe/Berlin", From: "2025-03-30T00:00:00+01:00", To: "2025-03-30T04:00:00+02:00"}, []int64{1, 2, 4}, 7},
		{"months in Berlin", history.Request{Name: "a", Step: "month", Zone: "Europe/Berlin", From: "2025-03", To: "2025-05"}, []int64{95, 32}, 127},
		{"days in UTC", history.Request{Name: "a", From: "2025-03-29", To: "2025-04-01"}, []int64{1, 30, 0}, 31},
	}
	for _, tt := range tests {
		for _, spanner := range []bool{false, true} {
			name := tt.name
			if spanner {
				name += ", days whole where no period starts"
			}
			t.Run(name, func(t *testing.T) {
				q := &quarters{at: added}
				var store history.Store = q
				if spanner {
					store = &spans{quarters: q}
				}
				svc := history.NewService(store, now)
				query, err := svc.Parse(tt.req)
				if err != nil {
					t.Fatal(err)
				}
				s, err := svc.Series(context.Background(), query)
				if err != nil {
					t.Fatal(err)
				}
				var got []int64
				for _, p := range s.Points {
					got = append(got, p.Count)
					if p.Start.Location() != query.Zone {
						t.Errorf("point %v not in the query's zone %v", p.Start, query.Zone)
					}
				}
				if !slices.Equal(got, tt.want) || s.Total != tt.total {
					t.Fatalf("points %v total %d, want %v total %d", got, s.Total, tt.want, tt.total)
				}
				if from, _ := history.QuarterOf(query.From); !q.asked[0].Equal(from) {
					t.Errorf("store asked from %v, want the UTC day of %v", q.asked[0], query.From)
				}
			})
		}
	}
}

// A Spanner is asked for the detail of only the days a period starts
// inside: a year of months in UTC reads no day's quarters.
func TestASpannerGivesWholeDaysWhereNoPeriodStartsInside(t *testing.T) {
	added := map[time.Time]int64{}
	for d := at("2024-01-01T06:00:00Z"); d.Year() == 2024; d = d.AddDate(0, 0, 1) {
		added[d] = 1
	}
	tests := []struct {
		name      string
		zone      string
		wantWhole int
	}{
		{"UTC: every month starts at a UTC midnight", "UTC", 366},
		{"Kolkata: every month starts inside a UTC day", "Asia/Kolkata", 366 - 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &spans{quarters: &quarters{at: added}}
			svc := history.NewService(st, func() time.Time { return at("2025-06-01T00:00:00Z") })
			q, err := svc.Parse(history.Request{Name: "a", Step: "month", Zone: tt.zone, From: "2024-01", To: "2025-01"})
			if err != nil {
				t.Fatal(err)
			}
			s, err := svc.Series(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if st.whole != tt.wantWhole {
				t.Errorf("%d days whole, want %d", st.whole, tt.wantWhole)
			}
			if tt.zone == "UTC" && (s.Total != 366 || s.Points[1].Count != 29) {
				t.Errorf("total %d, February %d; want 366, 29", s.Total, s.Points[1].Count)
			}
		})
	}
}

// Day steps carry the visitors of the UTC day that holds each day's noon;
// hour and month steps, and a service that counts no visitors, carry none.
func TestDayStepsCarryTheVisitorsOfTheUTCDayAtTheirNoon(t *testing.T) {
	now := func() time.Time { return at("2025-05-01T00:00:00Z") }
	tests := []struct {
		name     string
		req      history.Request
		counted  bool
		want     []int64 // visitors per point; nil: none asked for
		wantCall bool
	}{
		{"UTC days", history.Request{Name: "a", From: "2025-04-10", To: "2025-04-12"}, true, []int64{10, 11}, true},
		{"Kiritimati days (UTC+14): their noon is in the previous UTC day", history.Request{Name: "a", Zone: "Pacific/Kiritimati", From: "2025-04-10", To: "2025-04-12"}, true, []int64{9, 10}, true},
		{"hours", history.Request{Name: "a", Step: "hour", From: "2025-04-10T00:00:00Z", To: "2025-04-10T02:00:00Z"}, true, nil, false},
		{"months", history.Request{Name: "a", Step: "month", From: "2025-03", To: "2025-04"}, true, nil, false},
		{"no visitors counted", history.Request{Name: "a", From: "2025-04-10", To: "2025-04-12"}, false, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := history.NewService(&quarters{}, now)
			v := &visitorDays{}
			if tt.counted {
				svc.Visitors = v
			}
			q, err := svc.Parse(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			s, err := svc.Series(context.Background(), q)
			if err != nil {
				t.Fatal(err)
			}
			if (v.calls > 0) != tt.wantCall {
				t.Errorf("visitors read %d times, want any: %v", v.calls, tt.wantCall)
			}
			for i, p := range s.Points {
				switch {
				case tt.want == nil && p.Visitors != nil:
					t.Errorf("point %d has visitors %d, want none", i, *p.Visitors)
				case tt.want != nil && (p.Visitors == nil || *p.Visitors != tt.want[i]):
					t.Errorf("point %d visitors %v, want %d", i, p.Visitors, tt.want[i])
				}
			}
		})
	}
}

// Today is the current day of the zone, from its local midnight: what was
// added before it is yesterday's; visitors only when asked for.
func TestTodayIsTheCurrentDayOfTheZone(t *testing.T) {
	added := map[time.Time]int64{
		at("2025-04-16T18:15:00Z"): 1, // 23:45 in Kolkata, the 16th
		at("2025-04-16T18:30:00Z"): 2, // 00:00 in Kolkata, the 17th
		at("2025-04-17T10:00:00Z"): 4,
	}
	now := func() time.Time { return at("2025-04-17T10:20:00Z") }
	kolkata, err := history.LoadZone("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		zone     *time.Location
		visitors bool
		count    int64
		start    string
	}{
		{"UTC", time.UTC, false, 4, "2025-04-17T00:00:00Z"},
		{"Kolkata", kolkata, false, 6, "2025-04-16T18:30:00Z"},
		{"with visitors", time.UTC, true, 4, "2025-04-17T00:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := history.NewService(&quarters{at: added}, now)
			svc.Visitors = &visitorDays{}
			p, err := svc.Today(context.Background(), "a", tt.zone, tt.visitors)
			if err != nil {
				t.Fatal(err)
			}
			if p.Count != tt.count || !p.Start.Equal(at(tt.start)) {
				t.Errorf("today %v %d, want %s %d", p.Start, p.Count, tt.start, tt.count)
			}
			if (p.Visitors != nil) != tt.visitors || (tt.visitors && *p.Visitors != 17) {
				t.Errorf("visitors %v, want any: %v (17)", p.Visitors, tt.visitors)
			}
		})
	}
}

// A sum that leaves int64, in a period or in the total, is EOUTOFRANGE; a
// store's error comes back as it was.
func TestSeriesRefusesSumsBeyondInt64AndPassesStoreErrors(t *testing.T) {
	now := func() time.Time { return at("2025-05-01T00:00:00Z") }
	unavailable := counters.Errorf(counters.EUNAVAILABLE, "MySQL is away.")
	tests := []struct {
		name  string
		store *quarters
		code  string
	}{
		{"one period overflows", &quarters{at: map[time.Time]int64{at("2025-04-10T01:00:00Z"): math.MaxInt64, at("2025-04-10T02:00:00Z"): 1}}, counters.EOUTOFRANGE},
		{"the total overflows", &quarters{at: map[time.Time]int64{at("2025-04-10T01:00:00Z"): math.MaxInt64, at("2025-04-11T01:00:00Z"): 1}}, counters.EOUTOFRANGE},
		{"the store fails", &quarters{err: unavailable}, counters.EUNAVAILABLE},
		{"the largest sum that fits", &quarters{at: map[time.Time]int64{at("2025-04-10T01:00:00Z"): math.MaxInt64 - 1, at("2025-04-11T01:00:00Z"): 1}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := history.NewService(tt.store, now)
			q, err := svc.Parse(history.Request{Name: "a", From: "2025-04-10", To: "2025-04-12"})
			if err != nil {
				t.Fatal(err)
			}
			_, err = svc.Series(context.Background(), q)
			if code := counters.ErrorCode(err); code != tt.code {
				t.Fatalf("Series = %v, want code %q", err, tt.code)
			}
		})
	}
}

// Without a clock the service uses the real one: the default range ends
// with the current day.
func TestAServiceWithoutAClockUsesTheTime(t *testing.T) {
	svc := history.NewService(&quarters{}, nil)
	q, err := svc.Parse(history.Request{Name: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if now := time.Now(); !q.To.After(now) || q.To.Sub(now) > 24*time.Hour {
		t.Fatalf("default range ends %v, want the end of today (now %v)", q.To, now)
	}
}
