package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Counter is a named signed 64-bit value, as the service shows it.
type Counter struct {
	Name      string    `json:"name"`
	Value     int64     `json:"value"`
	Min       *int64    `json:"min,omitempty"` // nil: unbounded
	Max       *int64    `json:"max,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Increment adds by (negative and 0 allowed) to the counter name, creating
// it at 0 first, and returns the value this increment produced. A retry
// that follows a lost answer is recognised by the service and counts once.
// With Labels, the step carries them. Errors: OutOfRange (past int64 or
// the bounds; nothing changed), PermissionDenied, InvalidArgument,
// Conflict (IdempotencyKey reused for another request).
func (c *Client) Increment(ctx context.Context, name string, by int64, call ...CallOption) (int64, error) {
	body, err := jsonBody(struct {
		By     int64             `json:"by"`
		Labels map[string]string `json:"labels,omitempty"`
	}{by, labelsOf(call)})
	if err != nil {
		return 0, err
	}
	var out struct {
		Value int64 `json:"value"`
	}
	r := request{method: http.MethodPost, path: "/counters/" + esc(name) + "/increment", body: body, idempotent: true}
	r.with(call)
	_, err = c.call(ctx, r, &out)
	return out.Value, err
}

// Get returns the counter name. Errors: NotFound.
func (c *Client) Get(ctx context.Context, name string) (Counter, error) {
	var out Counter
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/counters/" + esc(name)}, &out)
	return out, err
}

// Ready asks the service whether it is ready to serve (GET /readyz): nil
// when it is, an *Error with Unavailable while MySQL does not answer. For
// health checks: give ctx a deadline, as its retries run until it ends.
func (c *Client) Ready(ctx context.Context) error {
	res, err := c.send(ctx, request{method: http.MethodGet, path: "/readyz", ops: true})
	if err != nil {
		return err
	}
	res.Body.Close()
	return nil
}

// Bound is a counter's min or max in a Set: its zero value keeps the
// counter's bound as it is, Limit(n) sets it, and NoLimit removes it.
type Bound struct {
	state int8 // 0 keep, 1 set, -1 remove
	value int64
}

// Limit is a bound of n.
func Limit(n int64) Bound { return Bound{state: 1, value: n} }

// NoLimit removes a bound.
var NoLimit = Bound{state: -1}

// SetOptions are the optional parts of a Set.
type SetOptions struct {
	Min, Max Bound
	// CreateOnly makes the set fail with Conflict when the counter exists
	// (If-None-Match: *).
	CreateOnly bool
}

// Set sets (resets) the counter name to value, creating it when missing,
// and returns the counter and whether this call created it. Errors:
// OutOfRange (the value outside the bounds), Conflict (CreateOnly, and it
// exists), PermissionDenied, InvalidArgument (min above max).
func (c *Client) Set(ctx context.Context, name string, value int64, opts SetOptions, call ...CallOption) (Counter, bool, error) {
	req := map[string]any{"value": value}
	for field, b := range map[string]Bound{"min": opts.Min, "max": opts.Max} {
		switch b.state {
		case 1:
			req[field] = b.value
		case -1:
			req[field] = nil
		}
	}
	body, err := jsonBody(req)
	if err != nil {
		return Counter{}, false, err
	}
	r := request{method: http.MethodPut, path: "/counters/" + esc(name), body: body, idempotent: true}
	r.with(call)
	if opts.CreateOnly {
		r.header = http.Header{"If-None-Match": {"*"}}
	}
	var out Counter
	status, err := c.call(ctx, r, &out)
	return out, status == http.StatusCreated, err
}

// Delete removes the counter name and its history. Errors: NotFound.
func (c *Client) Delete(ctx context.Context, name string) error {
	_, err := c.call(ctx, request{method: http.MethodDelete, path: "/counters/" + esc(name)}, nil)
	return err
}

// ListOptions choose the counters of a List.
type ListOptions struct {
	Prefix   string // only names that start with it; "" for all the key may see
	After    string // start after this name
	PageSize int    // counters per request, 1 to 1000; 0 is the service's default (100)
}

// List yields the counters in name order (byte order), following the pages
// until the last; breaking out of the loop stops it. An error ends it.
func (c *Client) List(ctx context.Context, opts ListOptions) iter.Seq2[Counter, error] {
	return func(yield func(Counter, error) bool) {
		after := opts.After
		for {
			q := url.Values{}
			if opts.Prefix != "" {
				q.Set("prefix", opts.Prefix)
			}
			if after != "" {
				q.Set("after", after)
			}
			if opts.PageSize > 0 {
				q.Set("limit", strconv.Itoa(opts.PageSize))
			}
			var page struct {
				Counters  []Counter `json:"counters"`
				NextAfter *string   `json:"next_after"`
			}
			if _, err := c.call(ctx, request{method: http.MethodGet, path: "/counters", query: q}, &page); err != nil {
				yield(Counter{}, err)
				return
			}
			for _, ctr := range page.Counters {
				if !yield(ctr, nil) {
					return
				}
			}
			if page.NextAfter == nil || *page.NextAfter == after {
				return
			}
			after = *page.NextAfter
		}
	}
}

// Reset sets every counter whose name starts with prefix (not empty) to
// value and returns how many it set; names starting with _ are never
// touched.
func (c *Client) Reset(ctx context.Context, prefix string, value int64) (int64, error) {
	return c.reset(ctx, map[string]any{"prefix": prefix, "value": value})
}

// ResetAll sets every counter to value (admin only).
func (c *Client) ResetAll(ctx context.Context, value int64) (int64, error) {
	return c.reset(ctx, map[string]any{"all": true, "value": value})
}

func (c *Client) reset(ctx context.Context, req map[string]any) (int64, error) {
	body, err := jsonBody(req)
	if err != nil {
		return 0, err
	}
	var out struct {
		Reset int64 `json:"reset"`
	}
	// A reset sets values: sending it twice is sending it once.
	_, err = c.call(ctx, request{method: http.MethodPost, path: "/counters/reset", body: body}, &out)
	return out.Reset, err
}

// Step is one increment of a Batch, with its labels (see Labels).
type Step struct {
	Name   string            `json:"name"`
	By     int64             `json:"by"`
	Labels map[string]string `json:"labels,omitempty"`
}

// Value is a counter's name and the value a write produced.
type Value struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
}

// Batch applies 1 to 100 increments all or nothing and returns the values
// they produced, in order. If any fails, nothing changed and the error
// names the item.
func (c *Client) Batch(ctx context.Context, steps []Step, call ...CallOption) ([]Value, error) {
	body, err := jsonBody(map[string][]Step{"increments": steps})
	if err != nil {
		return nil, err
	}
	var out struct {
		Counters []Value `json:"counters"`
	}
	r := request{method: http.MethodPost, path: "/counters/batch", body: body, idempotent: true}
	r.with(call)
	_, err = c.call(ctx, r, &out)
	return out.Counters, err
}
