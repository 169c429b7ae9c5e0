package history

import (
	"time"

	"github.com/countersvc/countersvc/counters"
)

// Periods are the hours, days and months of a zone, as instants: a day
// starts at local midnight (or, where a DST change skips midnight, at the
// first instant of the local date), a month at the midnight of its first
// day, an hour at a local time with no minutes. Hours are stepped from
// instant to instant, not from local clock reading to reading, so the hour
// that a DST change repeats is two periods and the one it skips none.

// floor is the start of the period of step in loc that holds t.
func floor(t time.Time, step Step, loc *time.Location) time.Time {
	lt := t.In(loc)
	switch step {
	case Hour:
		into := time.Duration(lt.Minute())*time.Minute + time.Duration(lt.Second())*time.Second + time.Duration(lt.Nanosecond())
		start := t.Add(-into)
		// Where the offset changed by a part of an hour within those
		// minutes (Lord Howe's 30-minute DST), start is no whole local
		// hour, so no start that next steps to: the hour that holds t
		// began at the last whole local hour before it, as next sees it.
		for i := 0; i < 3*4 && !wholeHour(start, loc); i++ {
			start = start.Add(-counters.HistoryGrain)
		}
		return start
	case Month:
		return dayStart(lt.Year(), lt.Month(), 1, loc)
	}
	start := dayStart(lt.Year(), lt.Month(), lt.Day(), loc)
	if start.After(t) { // t lies before the first instant of its own date: cannot happen, be safe
		return t
	}
	return start
}

// next is the start of the period after the one that starts at start.
func next(start time.Time, step Step, loc *time.Location) time.Time {
	lt := start.In(loc)
	switch step {
	case Hour:
		// The next instant at which the local clock shows a whole hour.
		// Every zone's offset is a whole number of quarter hours today, so
		// it lies on a quarter hour; the 30-minute DST change of
		// Australia/Lord_Howe makes that hour 30 or 90 minutes long.
		for t := start.Add(counters.HistoryGrain); t.Sub(start) <= 3*time.Hour; t = t.Add(counters.HistoryGrain) {
			if wholeHour(t, loc) {
				return t
			}
		}
		return start.Add(time.Hour) // a historical offset of odd minutes
	case Month:
		return dayStart(lt.Year(), lt.Month()+1, 1, loc)
	}
	return dayStart(lt.Year(), lt.Month(), lt.Day()+1, loc)
}

// wholeHour reports whether the local clock of loc shows a whole hour at t.
func wholeHour(t time.Time, loc *time.Location) bool {
	l := t.In(loc)
	return l.Minute() == 0 && l.Second() == 0 && l.Nanosecond() == 0
}

// dayStart is the first instant of the local date y-m-d in loc (time.Date
// normalizes m and d). Where a DST change skips midnight, time.Date may
// answer an instant of the day before; the date then starts where the
// skipped hours end. Where the clock goes back over midnight (Asia/Amman
// until 2022, Gaza, Antarctica/Casey, Vostok), time.Date answers the
// second midnight, and the hour or hours before it, from the first
// midnight, would lie in no day: the date starts at the first one.
func dayStart(y int, m time.Month, d int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, loc)
	want := time.Date(y, m, d, 0, 0, 0, 0, time.UTC) // the normalized date
	onDate := func(t time.Time) bool {
		l := t.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC).Equal(want)
	}
	for i := 0; i < 24*4; i++ {
		l := t.In(loc)
		if !time.Date(l.Year(), l.Month(), l.Day(), 0, 0, 0, 0, time.UTC).Before(want) {
			break
		}
		t = t.Add(counters.HistoryGrain)
	}
	for i := 0; i < 24*4 && onDate(t.Add(-counters.HistoryGrain)); i++ {
		t = t.Add(-counters.HistoryGrain)
	}
	return t
}

// ceil is the end of the period that holds the instant before t: t itself
// when t starts a period.
func ceil(t time.Time, step Step, loc *time.Location) time.Time {
	f := floor(t, step, loc)
	if f.Equal(t) {
		return t
	}
	return next(f, step, loc)
}

// periodStarts lists the starts of the periods in [from, to), at most max+1
// of them: one more than max says the range is too long.
func periodStarts(from, to time.Time, step Step, loc *time.Location, max int) []time.Time {
	var starts []time.Time
	for t := from; t.Before(to) && len(starts) <= max; t = next(t, step, loc) {
		starts = append(starts, t)
	}
	return starts
}
