// Package client is the Go client of countersvc's HTTP API (openapi.yaml): counters,
// history, live updates, export and import, API keys, boards and tickets,
// and webhooks.
//
// It is a module of its own, github.com/countersvc/countersvc/client
// (tagged client/vX.Y.Z), and uses the standard library only, so that an
// application that requires it takes in none of the service's
// dependencies; it must not import anything of the service either.
//
// Every method takes a context and gives up when it ends. A call that meets
// a network error or an answer of 429, 502, 503 or 504 is tried again, a few
// times, after a growing pause with jitter (or the answer's Retry-After),
// as long as the context's deadline leaves room. Increments, sets, batches
// and imports (of a file or a short stream) carry an Idempotency-Key made
// once per call (or given to it: IdempotencyKey) and sent again on its
// retries, so that a retry whose first attempt did commit changes nothing
// and answers what the first did: a sale is never counted twice. Requests
// that create something without such a key (a ticket, a board, an API key,
// a webhook) are tried again only when the service certainly did nothing
// (429, or no connection).
//
// An answered error is an *Error carrying the API's code; errors.Is(err,
// client.NotFound) and the other Code constants test for one.
package client

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client calls one service. It is safe for concurrent use.
type Client struct {
	base    *url.URL
	token   string
	http    *http.Client
	retries int
	backoff time.Duration
	maxWait time.Duration
}

// Options are the client's settings; the zero value works.
type Options struct {
	// Token is sent as "Authorization: Bearer <token>": the admin token
	// (COUNTERS_API_TOKEN) or an API key's secret. Empty sends none, which
	// the service allows for loopback clients when it has no admin token.
	Token string
	// HTTPClient sends the requests; nil uses a client of its own. Its
	// Timeout, if any, bounds each attempt; the context bounds the call.
	HTTPClient *http.Client
	// Retries is how many times a failed attempt is tried again (default
	// 4); negative turns retries off.
	Retries int
	// Backoff is the pause before the first retry (default 100ms); it
	// doubles for each later one, up to MaxBackoff (default 2s), and each
	// pause is drawn at random between half of it and all of it.
	Backoff, MaxBackoff time.Duration
}

// New returns a client of the service at baseURL, such as
// "http://localhost:8080" (with or without the trailing /v1).
func New(baseURL string, opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: the service's URL must be http://host[:port] or https://..., not %q", baseURL)
	}
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	u.RawQuery, u.Fragment = "", ""
	c := &Client{base: u, token: opts.Token, http: opts.HTTPClient, retries: opts.Retries,
		backoff: opts.Backoff, maxWait: opts.MaxBackoff}
	if c.http == nil {
		c.http = &http.Client{}
	}
	switch {
	case c.retries == 0:
		c.retries = 4
	case c.retries < 0:
		c.retries = 0
	}
	if c.backoff <= 0 {
		c.backoff = 100 * time.Millisecond
	}
	if c.maxWait <= 0 {
		c.maxWait = 2 * time.Second
	}
	return c, nil
}

// retryPolicy says which failures a request may be sent again after.
type retryPolicy int

const (
	// retrySafe: reads, deletes, resets, and writes with an idempotency
	// key; sending them twice has the effect of sending them once.
	retrySafe retryPolicy = iota
	// retryUnsent: creations without a key are tried again only when the
	// service certainly did nothing: 429, or a connection never made.
	retryUnsent
)

// request is one call: what to send, and how it may be retried.
type request struct {
	method string
	path   string // below /v1 (unless ops), already escaped
	ops    bool   // path is one of the operations endpoints, outside /v1 (/readyz)
	query  url.Values
	body   func() (io.Reader, error) // nil: no body; called once per attempt
	ctype  string
	// size is the body's length where the body func cannot tell it; 0
	// sends it chunked.
	size   int64
	header http.Header
	retry  retryPolicy
	// idempotent requests carry an Idempotency-Key: key, or one made
	// once per call.
	idempotent bool
	key        string
}

func jsonBody(v any) (func() (io.Reader, error), error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return func() (io.Reader, error) { return bytes.NewReader(b), nil }, nil
}

// answerFuncKey carries an AnswerFunc in a context.
type answerFuncKey struct{}

// WithAnswerFunc returns a context that makes every call made with it pass
// the body of each successful answer to f (a list calls it once per page),
// such as for printing the service's own JSON.
func WithAnswerFunc(ctx context.Context, f func(body []byte)) context.Context {
	return context.WithValue(ctx, answerFuncKey{}, f)
}

// CallOption is an optional part of one call, given after its arguments:
// IdempotencyKey, Labels.
type CallOption struct {
	key    string
	labels map[string]string
}

// Labels sends an Increment with these labels ({"channel": "web"}): each
// value is counted with the step, in the same transaction, and read back
// by Breakdown. At most 8; a key is 1 to 32 characters of a-z, 0-9 and _,
// a value 1 to 128 bytes of printable UTF-8, else InvalidArgument and
// nothing changed. Batch items carry theirs in Step.Labels.
func Labels(labels map[string]string) CallOption { return CallOption{labels: labels} }

// IdempotencyKey sends the call (Increment, Set, Batch, Import) with this
// Idempotency-Key (1 to 255 printable ASCII characters) instead of one made
// for the call: an application that keeps the key with its own record (an
// order) can retry the call after a restart and still count once. The
// service keeps a key for 24 hours; the same key with another request is
// Conflict.
func IdempotencyKey(key string) CallOption { return CallOption{key: key} }

// with applies the call's options to r.
func (r *request) with(opts []CallOption) {
	for _, o := range opts {
		if o.key != "" {
			r.key = o.key
		}
	}
}

// labelsOf are the labels the call's options give; nil for none.
func labelsOf(opts []CallOption) map[string]string {
	var labels map[string]string
	for _, o := range opts {
		if o.labels != nil {
			labels = o.labels
		}
	}
	return labels
}

type idempotencyKeyKey struct{}

// WithIdempotencyKey returns a context whose increment, set, batch or
// import is sent with this Idempotency-Key, as IdempotencyKey does; a
// call's own IdempotencyKey wins.
//
// Deprecated: pass IdempotencyKey(key) to the call. The context carries
// what crosses API boundaries, not a call's optional parameters; this form
// goes in the next minor release.
func WithIdempotencyKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, idempotencyKeyKey{}, key)
}

// callKey is the key a call was given, by IdempotencyKey or (deprecated)
// its context; "" when none.
func callKey(ctx context.Context, r request) string {
	if r.key != "" {
		return r.key
	}
	key, _ := ctx.Value(idempotencyKeyKey{}).(string)
	return key
}

// newIdempotencyKey is 130 random bits, as many as the API's own keys.
func newIdempotencyKey() string { return crand.Text() }

// send runs the request with its retries and returns the answer of the
// last attempt, or its error. A 2xx answer's body is left open for the
// caller; any other answer is read and turned into an *Error.
func (c *Client) send(ctx context.Context, r request) (*http.Response, error) {
	target := c.base.String() + "/v1" + r.path
	if r.ops {
		target = c.base.String() + r.path
	}
	if len(r.query) > 0 {
		target += "?" + r.query.Encode()
	}
	var key string
	if r.idempotent {
		key = callKey(ctx, r)
		if key == "" {
			key = newIdempotencyKey()
		}
	}
	lost := false // an earlier attempt's answer was lost: it may have done its work
	for attempt := 0; ; attempt++ {
		res, err := c.attempt(ctx, r, target, key)
		if err == nil && res.StatusCode < 300 {
			return res, nil
		}
		if err == nil && lost && r.method == http.MethodDelete && res.StatusCode == http.StatusNotFound {
			// The attempt whose answer was lost deleted it: what was asked is done.
			res.Body.Close()
			return &http.Response{StatusCode: http.StatusNoContent, Header: http.Header{}, Body: http.NoBody}, nil
		}
		// A proxy's 502 or 504 may also have come after the service did it.
		lost = lost || err != nil || res.StatusCode == http.StatusBadGateway || res.StatusCode == http.StatusGatewayTimeout
		var wait time.Duration
		if err == nil {
			wait = retryAfter(res.Header.Get("Retry-After"))
			err = readError(res)
		}
		if ctx.Err() != nil || attempt >= c.retries || !retriable(err, r.retry) {
			return nil, err
		}
		if wait <= 0 {
			wait = c.pause(attempt)
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return nil, err // no room for another attempt: the answer we have is the honest one
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

func (c *Client) attempt(ctx context.Context, r request, target, key string) (*http.Response, error) {
	var body io.Reader
	if r.body != nil {
		b, err := r.body()
		if err != nil {
			return nil, err
		}
		body = b
	}
	req, err := http.NewRequestWithContext(ctx, r.method, target, body)
	if err != nil {
		return nil, err
	}
	if r.size > 0 {
		req.ContentLength = r.size
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	if r.body != nil {
		ct := r.ctype
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	req.Header.Set("User-Agent", "countersvc-go-client")
	return c.http.Do(req)
}

// retriable says whether a failed attempt may be sent again under policy.
func retriable(err error, policy retryPolicy) bool {
	var e *Error
	if errors.As(err, &e) {
		switch e.Status {
		case http.StatusTooManyRequests:
			return true
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return policy == retrySafe
		}
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if policy == retryUnsent {
		var op *net.OpError
		return errors.As(err, &op) && op.Op == "dial"
	}
	return true // a network error: the connection broke, the answer was lost
}

// pause is the wait before retry attempt+1: exponential, capped, and drawn
// between half and all of it, so that clients that failed together do not
// come back together.
func (c *Client) pause(attempt int) time.Duration {
	d := c.backoff << min(attempt, 20)
	if d > c.maxWait || d <= 0 {
		d = c.maxWait
	}
	return d/2 + rand.N(d/2+1)
}

// retryAfter reads a Retry-After header: seconds, or an HTTP date.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return time.Until(t)
	}
	return 0
}

// call sends the request and decodes a JSON answer into out (nil: none).
func (c *Client) call(ctx context.Context, r request, out any) (int, error) {
	res, err := c.send(ctx, r)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, err
	}
	if f, ok := ctx.Value(answerFuncKey{}).(func([]byte)); ok && len(b) > 0 {
		f(b)
	}
	if out != nil && len(b) > 0 {
		if err := json.Unmarshal(b, out); err != nil {
			return res.StatusCode, fmt.Errorf("client: the service's answer to %s %s is not what the API says (%v): %.200s", r.method, r.path, err, b)
		}
	}
	return res.StatusCode, nil
}

// esc escapes a counter name (or any value) as one path segment: "/" too.
func esc(s string) string { return url.PathEscape(s) }
