package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// HistoryStep is the length of a history's periods.
type HistoryStep string

// The steps the service knows.
const (
	StepHour  HistoryStep = "hour"
	StepDay   HistoryStep = "day"
	StepMonth HistoryStep = "month"
)

// HistoryOptions choose the periods of a history; the zero value is the
// last 30 days in UTC.
type HistoryOptions struct {
	Step HistoryStep // StepDay when empty
	// From and To bound the half-open range [From, To), widened to whole
	// periods; the zero time for the defaults (To the end of the current
	// period, From 30 periods earlier, 48 for hours). A day or a month of
	// TZ is its local midnight: time.Date(2026, 4, 1, 0, 0, 0, 0, berlin).
	From, To time.Time
	TZ       string // an IANA zone where days and months start; default UTC
	// Annotations asks for the range's annotations beside the counts
	// (History.Annotations).
	Annotations bool
}

// History is how many increments each period counted.
type History struct {
	Name   string      `json:"name,omitempty"`
	Prefix string      `json:"prefix,omitempty"`
	Step   HistoryStep `json:"step"`
	TZ     string      `json:"tz"`
	From   time.Time   `json:"from"`
	To     time.Time   `json:"to"`
	Points []Point     `json:"points"`
	Total  int64       `json:"total"`
	// Annotations are the range's, by At, when HistoryOptions asked.
	Annotations []Annotation `json:"annotations,omitempty"`
}

// Point is one period of a History; Start carries the zone's offset.
type Point struct {
	Start time.Time `json:"start"`
	Count int64     `json:"count"`
	// Visitors is the period's distinct visitors, where the service counts
	// them (page hits, by day); nil where it does not.
	Visitors *int64 `json:"visitors,omitempty"`
}

// History returns the counts of the counter name per period. Errors:
// NotFound (neither a value nor history), InvalidArgument (an unknown step
// or zone, a bad time, more than 1,000 points).
func (c *Client) History(ctx context.Context, name string, opts HistoryOptions) (History, error) {
	return c.history(ctx, "/counters/"+esc(name)+"/history", opts.query())
}

// PrefixHistory sums the counts of every counter whose name starts with
// prefix (not empty) per period.
func (c *Client) PrefixHistory(ctx context.Context, prefix string, opts HistoryOptions) (History, error) {
	q := opts.query()
	q.Set("prefix", prefix)
	return c.history(ctx, "/history", q)
}

func (c *Client) history(ctx context.Context, path string, q url.Values) (History, error) {
	var out History
	_, err := c.call(ctx, request{method: http.MethodGet, path: path, query: q}, &out)
	return out, err
}

func (o HistoryOptions) query() url.Values {
	q := url.Values{}
	if o.Step != "" {
		q.Set("step", string(o.Step))
	}
	if !o.From.IsZero() {
		q.Set("from", o.From.Format(time.RFC3339Nano))
	}
	if !o.To.IsZero() {
		q.Set("to", o.To.Format(time.RFC3339Nano))
	}
	if o.TZ != "" {
		q.Set("tz", o.TZ)
	}
	if o.Annotations {
		q.Set("annotations", "true")
	}
	return q
}
