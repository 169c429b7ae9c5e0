package history

import (
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
)

func mustZone(tb testing.TB, name string) *time.Location {
	tb.Helper()
	z, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatal(err)
	}
	return z
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// Days start at local midnight, DST and half- and quarter-hour offsets
// included, and every start falls on a quarter hour of UTC.
func TestDaysStartAtLocalMidnight(t *testing.T) {
	tests := []struct {
		zone, date    string
		start, end    string // UTC
		hoursInTheDay float64
	}{
		{"Europe/Berlin", "2025-03-30", "2025-03-29T23:00:00Z", "2025-03-30T22:00:00Z", 23}, // spring forward
		{"Europe/Berlin", "2025-10-26", "2025-10-25T22:00:00Z", "2025-10-26T23:00:00Z", 25}, // fall back
		{"Europe/Berlin", "2025-06-01", "2025-05-31T22:00:00Z", "2025-06-01T22:00:00Z", 24},
		{"Asia/Kolkata", "2025-04-17", "2025-04-16T18:30:00Z", "2025-04-17T18:30:00Z", 24},
		{"Asia/Kathmandu", "2025-04-17", "2025-04-16T18:15:00Z", "2025-04-17T18:15:00Z", 24},
		{"America/St_Johns", "2025-03-09", "2025-03-09T03:30:00Z", "2025-03-10T02:30:00Z", 23},
		{"Australia/Lord_Howe", "2025-10-05", "2025-10-04T13:30:00Z", "2025-10-05T13:00:00Z", 23.5},
		// Midnight does not exist here that day: the day starts at 01:00.
		{"America/Santiago", "2022-09-11", "2022-09-11T04:00:00Z", "2022-09-12T03:00:00Z", 23},
	}
	for _, tc := range tests {
		t.Run(tc.zone+" "+tc.date, func(t *testing.T) {
			z := mustZone(t, tc.zone)
			d, _ := time.Parse(time.DateOnly, tc.date)
			start := dayStart(d.Year(), d.Month(), d.Day(), z)
			end := next(start, Day, z)
			if got, want := start.UTC(), utc(tc.start); !got.Equal(want) {
				t.Errorf("start %s, want %s", got, want)
			}
			if got, want := end.UTC(), utc(tc.end); !got.Equal(want) {
				t.Errorf("end %s, want %s", got, want)
			}
			if got := end.Sub(start).Hours(); got != tc.hoursInTheDay {
				t.Errorf("the day has %v hours, want %v", got, tc.hoursInTheDay)
			}
			if !start.Equal(start.Truncate(counters.HistoryGrain)) {
				t.Errorf("start %s is not on a quarter hour", start.UTC())
			}
			mid := start.Add(5 * time.Hour)
			if got := floor(mid, Day, z); !got.Equal(start) {
				t.Errorf("floor of %s is %s, want %s", mid, got, start)
			}
		})
	}
}

// Hours step from instant to instant: the repeated hour of a fall-back is
// two periods, the skipped one of a spring-forward none.
func TestHoursAcrossDSTChanges(t *testing.T) {
	tests := []struct {
		zone, from, to string
		hours          int
		firstLocal     string
	}{
		{"Europe/Berlin", "2025-10-26T00:00:00+02:00", "2025-10-26T06:00:00+01:00", 7, "00:00"},
		{"Europe/Berlin", "2025-03-30T00:00:00+01:00", "2025-03-30T06:00:00+02:00", 5, "00:00"},
		{"Asia/Kolkata", "2025-04-17T00:10:00+05:30", "2025-04-17T03:00:00+05:30", 3, "00:00"},
	}
	for _, tc := range tests {
		z := mustZone(t, tc.zone)
		from, to := floor(utc(tc.from), Hour, z), ceil(utc(tc.to), Hour, z)
		starts := periodStarts(from, to, Hour, z, MaxPoints)
		if len(starts) != tc.hours {
			t.Errorf("%s %s..%s: %d hours, want %d: %v", tc.zone, tc.from, tc.to, len(starts), tc.hours, starts)
		}
		if got := starts[0].In(z).Format("15:04"); got != tc.firstLocal {
			t.Errorf("%s: first hour starts at %s local, want %s", tc.zone, got, tc.firstLocal)
		}
		for i := 1; i < len(starts); i++ {
			if d := starts[i].Sub(starts[i-1]); d != time.Hour {
				t.Errorf("%s: hour %d lasts %s", tc.zone, i, d)
			}
		}
	}
}

// Parse: defaults, widening to whole periods, and every mistake a 400 with
// a message that names it.
func TestParse(t *testing.T) {
	now := utc("2025-04-17T10:20:00Z")
	tests := []struct {
		name     string
		req      Request
		from, to string // UTC, when no error
		points   int
		wantErr  string
	}{
		{"defaults: 30 days in UTC up to the end of today", Request{Name: "a"}, "2025-03-19T00:00:00Z", "2025-04-18T00:00:00Z", 30, ""},
		{"hour default is 48 hours", Request{Name: "a", Step: "hour"}, "2025-04-15T11:00:00Z", "2025-04-17T11:00:00Z", 48, ""},
		{"month default is 30 months", Request{Name: "a", Step: "month"}, "2022-11-01T00:00:00Z", "2025-05-01T00:00:00Z", 30, ""},
		{"dates are local midnights", Request{Name: "a", Zone: "Asia/Kolkata", From: "2025-04-01", To: "2025-04-03"}, "2025-03-31T18:30:00Z", "2025-04-02T18:30:00Z", 2, ""},
		{"months", Request{Name: "a", Step: "month", Zone: "Europe/Berlin", From: "2025-01", To: "2025-04"}, "2024-12-31T23:00:00Z", "2025-03-31T22:00:00Z", 3, ""},
		{"times widen to whole periods", Request{Prefix: "p/", From: "2025-04-01T10:00:00Z", To: "2025-04-02T00:00:01Z"}, "2025-04-01T00:00:00Z", "2025-04-03T00:00:00Z", 2, ""},
		{"an unescaped + arrives as a space", Request{Name: "a", Step: "hour", From: "2025-04-17T09:00:00 02:00", To: "2025-04-17T10:00:00 02:00"}, "2025-04-17T07:00:00Z", "2025-04-17T08:00:00Z", 1, ""},
		{"only to", Request{Name: "a", To: "2025-01-31"}, "2025-01-01T00:00:00Z", "2025-01-31T00:00:00Z", 30, ""},
		{"unknown step", Request{Name: "a", Step: "week"}, "", "", 0, "step must be hour, day or month"},
		{"unknown zone", Request{Name: "a", Zone: "Mars/Olympus"}, "", "", 0, "tz must be an IANA time zone"},
		{"Local is not a zone", Request{Name: "a", Zone: "Local"}, "", "", 0, "tz must be an IANA time zone"},
		{"malformed from", Request{Name: "a", From: "yesterday"}, "", "", 0, `from must be an RFC 3339 time`},
		{"malformed to", Request{Name: "a", To: "2025-13-01"}, "", "", 0, `to must be an RFC 3339 time`},
		{"reversed", Request{Name: "a", From: "2025-04-03", To: "2025-04-01"}, "", "", 0, "must be before to"},
		{"empty range", Request{Name: "a", From: "2025-04-03", To: "2025-04-03"}, "", "", 0, "must be before to"},
		{"from later today without to: the rest of today", Request{Name: "a", From: "2025-04-17T15:00:00Z"}, "2025-04-17T00:00:00Z", "2025-04-18T00:00:00Z", 1, ""},
		{"from later this hour without to", Request{Name: "a", Step: "hour", From: "2025-04-17T10:50:00Z"}, "2025-04-17T10:00:00Z", "2025-04-17T11:00:00Z", 1, ""},
		{"from later this month without to", Request{Name: "a", Step: "month", From: "2025-04-28"}, "2025-04-01T00:00:00Z", "2025-05-01T00:00:00Z", 1, ""},
		{"from tomorrow without to", Request{Name: "a", From: "2025-04-18"}, "", "", 0, "must be before the end of the current day"},
		{"from in the future without to", Request{Name: "a", From: "2026-01-01"}, "", "", 0, "must be before the end of the current day"},
		{"too many points", Request{Name: "a", Step: "hour", From: "2025-01-01", To: "2025-04-01"}, "", "", 0, "more than 1000 hours"},
		{"a summed range may hold more than 1000 periods", Request{Name: "a", From: "2020-01-01", To: "2025-01-01", Summed: true}, "2020-01-01T00:00:00Z", "2025-01-01T00:00:00Z", 1001, ""},
		{"1000 points are fine", Request{Name: "a", Step: "hour", From: "2025-01-01T00:00:00Z", To: "2025-02-11T16:00:00Z"}, "2025-01-01T00:00:00Z", "2025-02-11T16:00:00Z", 1000, ""},
		{"empty prefix", Request{}, "", "", 0, "prefix must not be empty"},
		{"bad name", Request{Name: "a\x01"}, "", "", 0, "control characters"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := parse(tc.req, now)
			if tc.wantErr != "" {
				if counters.ErrorCode(err) != counters.EINVALID || !strings.Contains(counters.ErrorMessage(err), tc.wantErr) {
					t.Fatalf("error %v, want EINVALID containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !q.From.Equal(utc(tc.from)) || !q.To.Equal(utc(tc.to)) {
				t.Errorf("range [%s, %s), want [%s, %s)", q.From.UTC(), q.To.UTC(), tc.from, tc.to)
			}
			if got := len(periodStarts(q.From, q.To, q.Step, q.Zone, MaxPoints)); got != tc.points {
				t.Errorf("%d points, want %d", got, tc.points)
			}
		})
	}
}

// Quarter hours land in the periods that hold them; the total sums them.
func TestSumPutsQuartersInTheirLocalDays(t *testing.T) {
	z := mustZone(t, "Asia/Kolkata")
	q, err := parse(Request{Name: "a", Zone: "Asia/Kolkata", From: "2025-04-17", To: "2025-04-19"}, utc("2025-04-20T00:00:00Z"))
	if err != nil {
		t.Fatal(err)
	}
	var d UTCDay
	d.Date = utc("2025-04-17T00:00:00Z")
	_, before := QuarterOf(utc("2025-04-17T18:15:00Z")) // 23:45 in Kolkata, the 17th
	_, after := QuarterOf(utc("2025-04-17T18:30:00Z"))  // 00:00 in Kolkata, the 18th
	d.Quarters[before], d.Quarters[after] = 5, 7
	d.Quarters[0] = 100 // 05:30 in Kolkata, the 17th
	s, err := sum(q, periodStarts(q.From, q.To, q.Step, q.Zone, MaxPoints), []UTCDay{d})
	if err != nil {
		t.Fatal(err)
	}
	want := []Point{{Start: dayStart(2025, 4, 17, z), Count: 105}, {Start: dayStart(2025, 4, 18, z), Count: 7}}
	for i, p := range s.Points {
		if !p.Start.Equal(want[i].Start) || p.Count != want[i].Count {
			t.Errorf("point %d = %v %d, want %v %d", i, p.Start, p.Count, want[i].Start, want[i].Count)
		}
	}
	if s.Total != 112 {
		t.Errorf("total %d, want 112", s.Total)
	}
}
