package history

import (
	"fmt"
	"strings"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// parse is Service.Parse at the time now.
func parse(r Request, now time.Time) (Query, error) {
	q := Query{Name: r.Name, Prefix: r.Prefix, Step: Step(r.Step), Zone: time.UTC}
	switch {
	case r.Name != "":
		if err := counters.ValidateName(r.Name); err != nil {
			return q, err
		}
	case r.Prefix == "":
		return q, counters.Errorf(counters.EINVALID, "prefix must not be empty.")
	default:
		if err := counters.ValidateName(r.Prefix); err != nil {
			return q, counters.Errorf(counters.EINVALID, "prefix: %s", counters.ErrorMessage(err))
		}
	}
	switch q.Step {
	case "":
		q.Step = Day
		q.Visitors = true
	case Day:
		q.Visitors = true
	case Hour, Month:
	default:
		return q, counters.Errorf(counters.EINVALID, "step must be hour, day or month.")
	}
	if r.Zone != "" {
		zone, err := LoadZone(r.Zone)
		if err != nil {
			return q, err
		}
		q.Zone = zone
	}

	var from, to time.Time
	var err error
	if r.From != "" {
		if from, err = ParseTime("from", r.From, q.Zone); err != nil {
			return q, err
		}
	}
	if r.To != "" {
		if to, err = ParseTime("to", r.To, q.Zone); err != nil {
			return q, err
		}
	}
	if r.From != "" && r.To != "" && !from.Before(to) {
		return q, counters.Errorf(counters.EINVALID, "from (%s) must be before to (%s).", r.From, r.To)
	}

	// Whole periods: from back to its period's start, to on to its
	// period's end; the defaults end with the current period.
	if r.To == "" {
		// to's default, the current period's end: a from later today
		// (step=day) still leaves a range, [from, to) of this period.
		q.To = next(floor(now, q.Step, q.Zone), q.Step, q.Zone)
		if r.From != "" && !from.Before(q.To) {
			return q, counters.Errorf(counters.EINVALID, "from (%s) must be before the end of the current %s (%s), to's default, when to is left out.", r.From, q.Step, q.To.In(q.Zone).Format(time.RFC3339))
		}
	} else {
		q.To = ceil(to, q.Step, q.Zone)
	}
	if r.From == "" {
		q.From = q.To
		for range defaultPoints[q.Step] {
			q.From = floor(q.From.Add(-1), q.Step, q.Zone)
		}
	} else {
		q.From = floor(from, q.Step, q.Zone)
	}
	if n := len(periodStarts(q.From, q.To, q.Step, q.Zone, MaxPoints)); n > MaxPoints && !r.Summed {
		return q, counters.Errorf(counters.EINVALID, "The range holds more than %d %ss; narrow it or use a longer step.", MaxPoints, q.Step)
	}
	return q, nil
}

// LoadZone is an IANA zone by name, EINVALID for an unknown one. "Local"
// would be whatever the server's zone is, so it is refused like any unknown
// name.
func LoadZone(name string) (*time.Location, error) {
	bad := counters.Errorf(counters.EINVALID, "tz must be an IANA time zone name such as Europe/Berlin or UTC.")
	if name == "Local" || len(name) > 64 {
		return nil, bad
	}
	zone, err := time.LoadLocation(name)
	if err != nil {
		return nil, bad
	}
	return zone, nil
}

// ParseTime reads from or to (field names it in the error): an RFC 3339
// time, or a local date YYYY-MM-DD, or a month YYYY-MM, both meaning local
// midnight in zone. Every range of the API is read with it (history,
// breakdowns, annotations).
func ParseTime(field, s string, zone *time.Location) (time.Time, error) {
	if strings.Contains(s, "T") {
		// A "+" of an offset left unescaped in a query string arrives as
		// a space; no RFC 3339 time has one.
		s := strings.Replace(s, " ", "+", 1)
		t, err := time.Parse(time.RFC3339Nano, s)
		if err == nil && t.Year() >= 1 && t.Year() <= 9999 {
			return t, nil
		}
	} else if d, err := time.Parse(time.DateOnly, s); err == nil {
		return dayStart(d.Year(), d.Month(), d.Day(), zone), nil
	} else if m, err := time.Parse("2006-01", s); err == nil {
		return dayStart(m.Year(), m.Month(), 1, zone), nil
	}
	return time.Time{}, counters.Errorf(counters.EINVALID, "%s must be an RFC 3339 time (2025-04-17T09:00:00+02:00), a date (2025-04-17) or a month (2025-04), not %s.", field, quoteShort(s))
}

// quoteShort quotes s for a message, cut so that a huge value is not echoed.
func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return fmt.Sprintf("%q", s)
}
