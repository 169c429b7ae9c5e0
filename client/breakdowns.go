package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ByName is the By of a PrefixBreakdown that splits it by counter.
const ByName = "name"

// BreakdownOptions choose the range of a breakdown and how many rows it
// lists; the zero value is the last 30 days (UTC) and 20 rows.
type BreakdownOptions struct {
	// From and To bound the range as HistoryOptions' do (a day of TZ is
	// its local midnight); the service widens it to whole UTC days, the
	// days labels are kept by, and Breakdown.From and To say what it
	// counted.
	From, To time.Time
	TZ       string
	Limit    int // rows, 1 to 1000; 20 when 0
	// Annotations asks for the range's annotations (Breakdown.Annotations).
	Annotations bool
}

// Breakdown is how a count splits by one label: Rows by count descending
// then value, More the count of the rows left out; every row plus More is
// Total, the history's total for the range. "(none)" counts steps without
// the label, "(other)" values beyond the counter's bound for a day.
type Breakdown struct {
	Name   string         `json:"name,omitempty"`
	Prefix string         `json:"prefix,omitempty"`
	By     string         `json:"by"`
	From   time.Time      `json:"from"`
	To     time.Time      `json:"to"`
	TZ     string         `json:"tz"`
	Total  int64          `json:"total"`
	Rows   []BreakdownRow `json:"rows"`
	More   int64          `json:"more"`
	// Annotations are the range's, by At, when BreakdownOptions asked.
	Annotations []Annotation `json:"annotations,omitempty"`
}

// BreakdownRow is one value of a Breakdown.
type BreakdownRow struct {
	Value string `json:"value"`
	Count int64  `json:"count"`
}

// Breakdown splits the count of the counter name by the label by. Errors:
// NotFound (neither a value nor history), InvalidArgument (a bad label, a
// bad time or zone, a limit outside 1 to 1000).
func (c *Client) Breakdown(ctx context.Context, name, by string, opts BreakdownOptions) (Breakdown, error) {
	return c.breakdown(ctx, "/counters/"+esc(name)+"/breakdown", by, opts.query())
}

// PrefixBreakdown splits the count of every counter under prefix (not
// empty) by the label by, or by counter with ByName.
func (c *Client) PrefixBreakdown(ctx context.Context, prefix, by string, opts BreakdownOptions) (Breakdown, error) {
	q := opts.query()
	q.Set("prefix", prefix)
	return c.breakdown(ctx, "/breakdown", by, q)
}

func (c *Client) breakdown(ctx context.Context, path, by string, q url.Values) (Breakdown, error) {
	q.Set("by", by)
	var out Breakdown
	_, err := c.call(ctx, request{method: http.MethodGet, path: path, query: q}, &out)
	return out, err
}

func (o BreakdownOptions) query() url.Values {
	q := HistoryOptions{From: o.From, To: o.To, TZ: o.TZ, Annotations: o.Annotations}.query()
	if o.Limit != 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	return q
}
