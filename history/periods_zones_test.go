package history

import (
	"archive/zip"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// everyZone is every zone of Go's tz database.
func everyZone(tb testing.TB) []*time.Location {
	tb.Helper()
	z, err := zip.OpenReader(filepath.Join(runtime.GOROOT(), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		tb.Fatalf("the list of zones: %v", err)
	}
	defer z.Close()
	var zones []*time.Location
	for _, f := range z.File {
		if loc, err := time.LoadLocation(f.Name); err == nil {
			zones = append(zones, loc)
		}
	}
	if len(zones) < 400 {
		tb.Fatalf("read %d zones, want the whole database", len(zones))
	}
	return zones
}

// In every zone, around every change of offset from 2020 to 2027 and on
// ordinary days between them, the hours, days and months tile time: each
// period starts where the one before it ends, on a quarter hour of UTC, at
// a whole local hour (an hour), at the first instant of its local date (a
// day: midnight, or where a change skips midnight the end of the skipped
// time), on the 1st (a month); floor finds the period that holds an
// instant, and ceil the end of the period before it. Lengths stay within
// what a change of offset makes of them: half an hour either way for an
// hour (Lord Howe), up to the three hours Antarctica/Casey has changed by
// for a day or a month.
func TestPeriodsTileTimeInEveryZone(t *testing.T) {
	zones := everyZone(t)
	if testing.Short() {
		zones = zones[:40] // the whole database is a few seconds with -race
	}
	from, until := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, loc := range zones {
		// The instants to look around: each change of offset, and the 1st
		// and 15th of every third month, at an odd time of day.
		var around []time.Time
		for m := from; m.Before(until); m = m.AddDate(0, 3, 0) {
			around = append(around, m.Add(7*time.Hour+13*time.Minute), m.AddDate(0, 0, 14).Add(19*time.Hour+47*time.Minute))
		}
		for t := from.In(loc); t.Before(until); {
			_, end := t.ZoneBounds()
			if end.IsZero() || !end.Before(until) {
				break
			}
			around = append(around, end.Add(-time.Minute), end, end.Add(time.Minute))
			t = end
		}
		for _, at := range around {
			steps := []Step{Hour, Day, Month}
			if repeatsAMidnight(loc, at) {
				steps = []Step{Hour} // see TestAnInstantBeforeARepeatedMidnightIsInItsDay
			}
			if changesByAPartOfAnHour(loc, at) {
				steps = steps[1:] // see TestLordHowesRepeatedHalfHourIsInOneHour
			}
			checkPeriodsAround(t, loc, at, steps)
		}
	}
}

// checkPeriodsAround checks the hours, days and months of loc from the
// period before at's to the one after it.
func checkPeriodsAround(t *testing.T, loc *time.Location, at time.Time, steps []Step) {
	t.Helper()
	lengths := map[Step][2]time.Duration{
		Hour:  {30 * time.Minute, 90 * time.Minute},
		Day:   {20 * time.Hour, 28 * time.Hour},
		Month: {28*24*time.Hour - 4*time.Hour, 31*24*time.Hour + 4*time.Hour},
	}
	for _, step := range steps {
		start := floor(at, step, loc)
		end := next(start, step, loc)
		if start.After(at) || !end.After(at) {
			t.Fatalf("%s %s: floor %s and next %s do not hold %s", loc, step, start, end, at)
		}
		if again := floor(start, step, loc); !again.Equal(start) {
			t.Fatalf("%s %s: floor of the start %s is %s", loc, step, start, again)
		}
		wantCeil := end
		if start.Equal(at) {
			wantCeil = at
		}
		if c := ceil(at, step, loc); !c.Equal(wantCeil) {
			t.Fatalf("%s %s: ceil(%s) is %s, want %s", loc, step, at, c, wantCeil)
		}
		if c := ceil(start, step, loc); !c.Equal(start) {
			t.Fatalf("%s %s: ceil of a start %s is %s", loc, step, start, c)
		}
		prev := floor(start.Add(-time.Nanosecond), step, loc)
		for _, p := range [][2]time.Time{{prev, start}, {start, end}} {
			s, e := p[0], p[1]
			if !next(s, step, loc).Equal(e) {
				t.Fatalf("%s %s: the period after %s starts at %s, want %s", loc, step, s, next(s, step, loc), e)
			}
			if _, off := s.Zone(); off%(15*60) == 0 && s.Unix()%(15*60) != 0 {
				t.Fatalf("%s %s: %s is not on a quarter hour of UTC", loc, step, s.UTC())
			}
			if d := e.Sub(s); d < lengths[step][0] || d > lengths[step][1] {
				t.Fatalf("%s %s: the period from %s lasts %s", loc, step, s, d)
			}
			l := s.In(loc)
			switch step {
			case Hour:
				if l.Minute() != 0 || l.Second() != 0 {
					t.Fatalf("%s: an hour starts at %s local", loc, l.Format("15:04:05"))
				}
			case Day, Month:
				// The first instant of its date: the instant before it
				// is on another local date.
				before := s.Add(-time.Nanosecond).In(loc)
				if before.Day() == l.Day() && before.Month() == l.Month() {
					t.Fatalf("%s: a day starts at %s, and %s is the same date", loc, l, before)
				}
				if step == Month && l.Day() != 1 {
					t.Fatalf("%s: a month starts on the %d.", loc, l.Day())
				}
			}
		}
		// A day ends on the next local date, a month in the next month.
		if step != Hour {
			ls, le := start.In(loc), end.In(loc)
			want := time.Date(ls.Year(), ls.Month(), ls.Day()+1, 0, 0, 0, 0, time.UTC)
			if step == Month {
				want = time.Date(ls.Year(), ls.Month()+1, 1, 0, 0, 0, 0, time.UTC)
			}
			if got := time.Date(le.Year(), le.Month(), le.Day(), 0, 0, 0, 0, time.UTC); !got.Equal(want) {
				t.Fatalf("%s %s: the period from %s ends on %s, want %s", loc, step, ls, got.Format(time.DateOnly), want.Format(time.DateOnly))
			}
		}
	}
}

// repeatsAMidnight reports whether a change of offset within a day of at
// turns the clock back over a midnight (Asia/Amman until 2022, Gaza,
// Antarctica/Casey and Vostok), so that a local date starts twice.
func repeatsAMidnight(loc *time.Location, at time.Time) bool {
	l := at.In(loc)
	for dd := -1; dd <= 1; dd++ {
		m := time.Date(l.Year(), l.Month(), l.Day()+dd, 0, 0, 0, 0, loc)
		before, on := m.Add(-time.Nanosecond).In(loc), m.In(loc)
		if before.Day() == on.Day() && before.Month() == on.Month() {
			return true
		}
	}
	return false
}

// changesByAPartOfAnHour reports whether the offset changes within three
// hours of at by other than whole hours (Australia/Lord_Howe's half hour).
func changesByAPartOfAnHour(loc *time.Location, at time.Time) bool {
	_, a := at.Add(-3 * time.Hour).In(loc).Zone()
	_, b := at.Add(3 * time.Hour).In(loc).Zone()
	return (a-b)%3600 != 0
}

// Where the clock goes back over midnight, the date's first midnight is
// the day's start; floor takes time.Date's answer, the second one, and
// answers an instant of the first hour with the instant itself ("cannot
// happen, be safe"): a step then counts in no day. Found by
// TestPeriodsTileTimeInEveryZone; periods.go is not this test's to change.
func TestAnInstantBeforeARepeatedMidnightIsInItsDay(t *testing.T) {
	amman := mustZone(t, "Asia/Amman")
	at := utc("2020-10-29T21:30:00Z") // 00:30 EEST, before the clock goes back from 01:00 to 00:00
	if got, want := floor(at, Day, amman), utc("2020-10-29T21:00:00Z"); !got.Equal(want) {
		t.Fatalf("floor(%s) = %s, want the first midnight %s", at, got.UTC(), want)
	}
}

// Lord Howe goes back from 02:00 to 01:30: next makes 01:00 to 02:00
// (+10:30) one hour of 90 minutes, and floor of an instant in its last
// half hour answers 01:30 (+11), the start of no hour. Found by
// TestPeriodsTileTimeInEveryZone; periods.go is not this test's to change.
func TestLordHowesRepeatedHalfHourIsInOneHour(t *testing.T) {
	lh := mustZone(t, "Australia/Lord_Howe")
	at := utc("2020-04-04T15:00:00Z") // 01:30 +10:30, the second 01:30
	start := floor(at, Hour, lh)
	if end := next(start, Hour, lh); start.After(at) || !end.After(at) || !floor(start, Hour, lh).Equal(start) {
		t.Fatalf("the hour of %s: floor %s, next %s", at, start.UTC(), end.UTC())
	}
}
