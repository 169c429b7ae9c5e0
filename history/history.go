// Package history is the domain of a counter's history: how much its
// increments added per hour, day or month of a time zone, for one counter
// or summed over the counters under a prefix. It parses and checks the
// question, lays out the periods (DST-correct, see periods.go) and sums the
// store's quarter hours into them. It knows nothing of SQL or HTTP; storage/
// keeps the quarter hours (written with every increment, see
// counters.HistoryGrain).
package history

import (
	"context"
	"sort"
	"time"

	_ "time/tzdata" // every IANA zone, also where the host has no zoneinfo

	"github.com/countersvc/countersvc/counters"
)

// Step is the length of a history's periods.
type Step string

// The steps.
const (
	Hour  Step = "hour"
	Day   Step = "day"
	Month Step = "month"
)

// MaxPoints is the most periods one answer holds.
const MaxPoints = 1000

// defaultPoints is how many periods a query without from covers, by step.
var defaultPoints = map[Step]int{Hour: 48, Day: 30, Month: 30}

// QuartersPerDay is how many quarter hours (counters.HistoryGrain) a UTC
// day has.
const QuartersPerDay = int(24 * time.Hour / counters.HistoryGrain)

// Query asks for the history of one counter (Name) or of every counter whose
// name starts with Prefix, per Step in Zone, over [From, To): whole periods.
type Query struct {
	Name     string
	Prefix   string
	Step     Step
	Zone     *time.Location
	From, To time.Time
	// Visitors asks for each day's visitors too (day steps only); Parse
	// sets it for every day step.
	Visitors bool
}

// Point is one period and what increments added in it.
type Point struct {
	Start time.Time // in the query's zone
	Count int64
	// Visitors are the distinct visitors of the day (of the union of the
	// prefix's counters), on day steps when visitors are counted; nil
	// otherwise. Visitors are kept per UTC day (their salt's): a day of
	// another zone shows those of the UTC day that holds its noon.
	Visitors *int64
}

// Series is the answer: every period of the range, zeros included, and
// their sum.
type Series struct {
	Query
	Points []Point
	Total  int64
}

// UTCDay is one UTC day of history: what increments added in each of its
// quarter hours, 0 where nothing happened.
type UTCDay struct {
	Date     time.Time // midnight UTC
	Quarters [QuartersPerDay]int64
}

// Store is what the history needs from persistence.
type Store interface {
	// HistoryDays returns the UTC days in [from, to) (midnights UTC) that
	// hold history of the counter name or, when name is empty, the sum over
	// the counters under prefix, in order. Returns ENOTFOUND for a name that
	// has neither a value nor history, EOUTOFRANGE when a quarter's sum
	// leaves int64.
	HistoryDays(ctx context.Context, name, prefix string, from, to time.Time) ([]UTCDay, error)
}

// Spanner is a Store that can give a day that no period starts inside as
// one figure, which saves it reading the day's detail: a year of months
// has about 13 such days, not 365.
type Spanner interface {
	// HistorySpans is HistoryDays, except that a day for which inside is
	// false may come as its total, in its first quarter hour.
	HistorySpans(ctx context.Context, name, prefix string, from, to time.Time, inside func(day time.Time) bool) ([]UTCDay, error)
}

// VisitorDays is what the history needs of the visitor count
// (visitors.Counter).
type VisitorDays interface {
	// Days returns the distinct visitors of the counter name or, when name
	// is empty, of the union of the counters under prefix, per UTC day in
	// [from, to), keyed by the day's midnight; days without any are left
	// out.
	Days(ctx context.Context, name, prefix string, from, to time.Time) (map[time.Time]int64, error)
}

// Service answers history queries from a Store.
type Service struct {
	store Store
	now   func() time.Time
	// Visitors, when set, gives day steps their visitors.
	Visitors VisitorDays
}

// NewService returns the history service over store; now is the clock that
// says which period is the current one (the store's, so that both agree).
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// Request is a history question as a client spells it: every field may be
// empty, meaning its default.
type Request struct {
	Name, Prefix string
	Step, Zone   string
	From, To     string
	// Summed says the range is summed, not answered period by period (a
	// breakdown's): it may hold more than MaxPoints periods.
	Summed bool
}

// Parse checks r and turns it into a Query with whole periods; every
// mistake is EINVALID with a message that says what is wrong.
func (s *Service) Parse(r Request) (Query, error) {
	return parse(r, s.now())
}

// Series answers q, which Parse made.
func (s *Service) Series(ctx context.Context, q Query) (*Series, error) {
	starts := periodStarts(q.From, q.To, q.Step, q.Zone, MaxPoints)
	fromDay, _ := QuarterOf(q.From)
	toDay, _ := QuarterOf(q.To.Add(-1))
	var days []UTCDay
	var err error
	if sp, ok := s.store.(Spanner); ok && q.Step != Hour {
		// The UTC days that a period starts inside of; every other day
		// lies in one period whole.
		inside := map[time.Time]bool{}
		for _, t := range append(starts, q.To) {
			if day, quarter := QuarterOf(t); quarter != 0 || !t.Equal(day) {
				inside[day] = true
			}
		}
		days, err = sp.HistorySpans(ctx, q.Name, q.Prefix, fromDay, toDay.AddDate(0, 0, 1), func(day time.Time) bool { return inside[day] })
	} else {
		days, err = s.store.HistoryDays(ctx, q.Name, q.Prefix, fromDay, toDay.AddDate(0, 0, 1))
	}
	if err != nil {
		return nil, err
	}
	series, err := sum(q, starts, days)
	if err != nil || q.Step != Day || !q.Visitors || s.Visitors == nil {
		return series, err
	}
	return series, s.addVisitors(ctx, series)
}

// addVisitors gives each day of series its visitors: those of the UTC day
// that holds the day's noon, which for UTC is the day itself.
func (s *Service) addVisitors(ctx context.Context, series *Series) error {
	utcDays := make([]time.Time, len(series.Points))
	for i, p := range series.Points {
		utcDays[i], _ = QuarterOf(p.Start.Add(12 * time.Hour))
	}
	if len(utcDays) == 0 {
		return nil
	}
	seen, err := s.Visitors.Days(ctx, series.Name, series.Prefix, utcDays[0], utcDays[len(utcDays)-1].AddDate(0, 0, 1))
	if err != nil {
		return err
	}
	for i := range series.Points {
		n := seen[utcDays[i]]
		series.Points[i].Visitors = &n
	}
	return nil
}

// Today is what increments added to the counter name since the start of
// the current day in zone and, when visitors is set (and visitors are
// counted), the day's visitors: a badge that shows none saves their read.
func (s *Service) Today(ctx context.Context, name string, zone *time.Location, visitors bool) (Point, error) {
	now := s.now()
	from := floor(now, Day, zone)
	series, err := s.Series(ctx, Query{Name: name, Step: Day, Zone: zone, From: from, To: next(from, Day, zone), Visitors: visitors})
	if err != nil {
		return Point{}, err
	}
	return series.Points[0], nil
}

// sum adds the quarter hours of days into the periods that start at starts.
// A quarter hour counts in the period that holds its start.
func sum(q Query, starts []time.Time, days []UTCDay) (*Series, error) {
	out := &Series{Query: q, Points: make([]Point, len(starts))}
	for i, st := range starts {
		out.Points[i].Start = st.In(q.Zone)
	}
	for _, d := range days {
		for qi, n := range d.Quarters {
			if n == 0 {
				continue
			}
			at := d.Date.Add(time.Duration(qi) * counters.HistoryGrain)
			if at.Before(q.From) || !at.Before(q.To) {
				continue
			}
			i := sort.Search(len(starts), func(i int) bool { return starts[i].After(at) }) - 1
			var ok bool
			if out.Points[i].Count, ok = counters.Add(out.Points[i].Count, n); !ok {
				return nil, tooLarge()
			}
		}
	}
	for _, p := range out.Points {
		var ok bool
		if out.Total, ok = counters.Add(out.Total, p.Count); !ok {
			return nil, tooLarge()
		}
	}
	return out, nil
}

func tooLarge() error {
	return counters.Errorf(counters.EOUTOFRANGE, "A count of this history leaves the signed 64-bit range; ask for shorter periods or a shorter range.")
}

// QuarterOf is the UTC midnight of t's UTC date, and t's quarter hour in it
// (0 to QuartersPerDay-1): where history keeps what happened at t.
func QuarterOf(t time.Time) (day time.Time, quarter int) {
	t = t.UTC()
	day = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return day, int(t.Sub(day) / counters.HistoryGrain)
}
