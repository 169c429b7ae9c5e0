// Package breakdowns is the domain of what a count was made of: how a
// counter's (or a prefix's) history over a range splits by one label of
// its increments (Labels), or by counter. It parses and checks the
// question, widens the range to the UTC days labels are kept by, and turns
// the store's counts into rows that add up to the history's total: steps
// without the label are the row LabelNone. It knows nothing of
// SQL or HTTP; storage/ counts the labels with every labelled increment,
// in its transaction (see Of and labels.go).
package breakdowns

import (
	"context"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
)

// ByName is the By that splits a prefix's count by counter.
const ByName = "name"

// Limits of Query.Limit.
const (
	DefaultLimit = 20
	MaxLimit     = 1000
)

// Request is a breakdown question as a client spells it; empty fields
// mean their defaults (By has none).
type Request struct {
	Name, Prefix string
	By           string
	Zone         string
	From, To     string
	Limit        string
}

// Query is a checked Request: one counter (Name) or the counters under
// Prefix, split by the label By (or ByName), over the UTC days [From, To).
type Query struct {
	Name, Prefix string
	By           string
	Zone         *time.Location // the zone the request's dates were read in
	From, To     time.Time      // midnights UTC: what is counted
	Limit        int
}

// Row is one value and the count of the steps that carried it.
type Row struct {
	Value string
	Count int64
}

// Breakdown is the answer: the largest rows, and what the rest add up to.
// Total is the sum of every row and More, the history's total for the
// range.
type Breakdown struct {
	Query
	Total int64
	Rows  []Row
	More  int64
}

// Counts is what the store read for a query, from one snapshot: the
// labelled counts per value (or, by name, each counter's count), and the
// history's total over the range.
type Counts struct {
	Values map[string]*big.Int
	Total  *big.Int
}

// Store is what breakdowns need from persistence.
type Store interface {
	// Counts returns, from one snapshot, the counts of label's values (or
	// with label ByName each counter's history) and the history's total
	// of the counter name or, when name is empty, of the counters under
	// prefix, over the UTC days [from, to). Returns ENOTFOUND for a name
	// that has neither a value nor history.
	Counts(ctx context.Context, name, prefix, label string, from, to time.Time) (Counts, error)
}

// Service answers breakdown queries from a Store.
type Service struct {
	store   Store
	history *history.Service // reads ranges as history does
}

// NewService returns the breakdowns over store; now is the store's clock.
func NewService(store Store, now func() time.Time) *Service {
	return &Service{store: store, history: history.NewService(nil, now)}
}

// Parse checks r and turns it into a Query over whole UTC days: the days
// that hold r's range in its zone (dates and defaults as for history's
// day steps). Every mistake is EINVALID with a message that says what is
// wrong.
func (s *Service) Parse(r Request) (Query, error) {
	q := Query{Name: r.Name, Prefix: r.Prefix, By: r.By, Limit: DefaultLimit}
	if r.By == "" {
		return q, counters.Errorf(counters.EINVALID, "by must name a label (such as channel) or be name.")
	}
	if r.By != ByName {
		if err := ValidateLabelKey(r.By); err != nil {
			return q, counters.Errorf(counters.EINVALID, "by: %s", counters.ErrorMessage(err))
		}
	}
	if r.Limit != "" {
		n, err := strconv.ParseInt(r.Limit, 10, 64)
		if err != nil || n < 1 || n > MaxLimit {
			return q, counters.Errorf(counters.EINVALID, "limit must be between 1 and %d.", MaxLimit)
		}
		q.Limit = int(n)
	}
	hq, err := s.history.Parse(history.Request{Name: r.Name, Prefix: r.Prefix, Step: string(history.Day), Zone: r.Zone, From: r.From, To: r.To, Summed: true})
	if err != nil {
		return q, err
	}
	q.Zone = hq.Zone
	q.From, _ = history.QuarterOf(hq.From)
	q.To, _ = history.QuarterOf(hq.To)
	if q.To.Before(hq.To) {
		q.To = q.To.AddDate(0, 0, 1)
	}
	return q, nil
}

// Breakdown answers q, which Parse made. Returns ENOTFOUND for a counter
// with neither a value nor history, EOUTOFRANGE when a count leaves int64.
func (s *Service) Breakdown(ctx context.Context, q Query) (*Breakdown, error) {
	c, err := s.store.Counts(ctx, q.Name, q.Prefix, q.By, q.From, q.To)
	if err != nil {
		return nil, err
	}
	values := c.Values
	if q.By != ByName {
		// Steps without the label: the history's total less the labelled.
		none := new(big.Int).Set(c.Total)
		for _, n := range values {
			none.Sub(none, n)
		}
		if old, ok := values[LabelNone]; ok {
			none.Add(none, old) // a client's own "(none)" is the same row
		}
		values[LabelNone] = none
	}
	return rows(q, values, c.Total)
}

// rows sorts values into the answer: count descending, then value; rows
// of 0 are left out.
func rows(q Query, values map[string]*big.Int, total *big.Int) (*Breakdown, error) {
	type bigRow struct {
		value string
		count *big.Int
	}
	all := make([]bigRow, 0, len(values))
	for v, n := range values {
		if n.Sign() != 0 {
			all = append(all, bigRow{v, n})
		}
	}
	slices.SortFunc(all, func(a, b bigRow) int {
		if c := b.count.Cmp(a.count); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
	out := &Breakdown{Query: q}
	if !total.IsInt64() {
		return nil, tooLarge()
	}
	out.Total = total.Int64()
	more := new(big.Int)
	for i, r := range all {
		if i >= q.Limit {
			more.Add(more, r.count)
			continue
		}
		if !r.count.IsInt64() {
			return nil, tooLarge()
		}
		out.Rows = append(out.Rows, Row{Value: r.value, Count: r.count.Int64()})
	}
	if !more.IsInt64() {
		return nil, tooLarge()
	}
	out.More = more.Int64()
	return out, nil
}

func tooLarge() error {
	return counters.Errorf(counters.EOUTOFRANGE, "A count of this breakdown is beyond the signed 64-bit range.")
}
