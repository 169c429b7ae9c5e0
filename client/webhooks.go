package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// ID is the id of a webhook or a delivery, as text: the API leaves open
// whether it is a number or a string, and either reads as an ID.
type ID string

// UnmarshalJSON reads a JSON number or string.
func (id *ID) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(b, []byte(`"`)) {
		var s string
		err := json.Unmarshal(b, &s)
		*id = ID(s)
		return err
	}
	var n json.Number
	err := json.Unmarshal(b, &n)
	*id = ID(n)
	return err
}

// Webhook calls a URL when a counter crosses a threshold, or, as an
// alert (Window set), when the sum of its steps over the window starts
// or stops being at least Above or under Below.
type Webhook struct {
	ID         ID      `json:"id"`
	URL        string  `json:"url"`
	Name       string  `json:"name,omitempty"`   // the one counter it watches, or
	Prefix     string  `json:"prefix,omitempty"` // every counter under a prefix
	Thresholds []int64 `json:"thresholds,omitempty"`
	Every      int64   `json:"every,omitempty"`
	Direction  string  `json:"direction,omitempty"` // up, down or both; "" for an alert
	// An alert's window ("1h", "2d") and its Above or Below (nil: not it).
	Window     string     `json:"window,omitempty"`
	Above      *int64     `json:"above,omitempty"`
	Below      *int64     `json:"below,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	DisabledAt *time.Time `json:"disabled_at"`
	// Secret signs the calls (Standard Webhooks), in the answers of
	// CreateWebhook and RotateWebhookSecret only.
	Secret string `json:"secret,omitempty"`
	// PreviousSecretExpiresAt is, in RotateWebhookSecret's answer, until
	// when the secret it replaced signs the calls too.
	PreviousSecretExpiresAt *time.Time `json:"previous_secret_expires_at,omitempty"`
}

// WebhookRequest describes a new webhook: Name or Prefix, and Thresholds
// and/or Every; or, for an alert, Window (5m to 7d: "90m", "6h", "2d")
// and one of Above and Below (see AlertAbove and AlertBelow).
type WebhookRequest struct {
	URL        string  `json:"url"`
	Name       string  `json:"name,omitempty"`
	Prefix     string  `json:"prefix,omitempty"`
	Thresholds []int64 `json:"thresholds,omitempty"`
	Every      int64   `json:"every,omitempty"`
	Direction  string  `json:"direction,omitempty"` // default up
	Window     string  `json:"window,omitempty"`
	Above      *int64  `json:"above,omitempty"`
	Below      *int64  `json:"below,omitempty"`
}

// AlertAbove is the request of a rate alert on url: a call when the sum
// of the steps counted over the window, of the counter name or of the
// counters under prefix (give one of the two), reaches n.
func AlertAbove(url, name, prefix, window string, n int64) WebhookRequest {
	return WebhookRequest{URL: url, Name: name, Prefix: prefix, Window: window, Above: &n}
}

// AlertBelow is the request of an alert when the window's sum falls under
// n; AlertBelow(url, name, "", "6h", 1) calls when nothing was counted
// for six hours.
func AlertBelow(url, name, prefix, window string, n int64) WebhookRequest {
	return WebhookRequest{URL: url, Name: name, Prefix: prefix, Window: window, Below: &n}
}

// Delivery is one event sent, or being sent, to a webhook.
type Delivery struct {
	ID             ID              `json:"id"`
	Status         string          `json:"status"` // pending, delivered or failed
	Attempts       int             `json:"attempts"`
	LastStatusCode *int            `json:"last_status_code"`
	NextAttemptAt  *time.Time      `json:"next_attempt_at"`
	CreatedAt      time.Time       `json:"created_at"` // recorded with the change that crossed
	Event          json.RawMessage `json:"event"`
}

// CreateWebhook makes a webhook and returns it with its secret. Errors:
// InvalidArgument (such as a URL that resolves to a private address).
func (c *Client) CreateWebhook(ctx context.Context, w WebhookRequest) (Webhook, error) {
	body, err := jsonBody(w)
	if err != nil {
		return Webhook{}, err
	}
	var out Webhook
	_, err = c.call(ctx, request{method: http.MethodPost, path: "/webhooks", body: body, retry: retryUnsent}, &out)
	return out, err
}

// Webhooks lists the webhooks, without secrets.
func (c *Client) Webhooks(ctx context.Context) ([]Webhook, error) {
	var out struct {
		Webhooks []Webhook `json:"webhooks"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/webhooks"}, &out)
	return out.Webhooks, err
}

// Webhook returns the webhook id, without its secret.
func (c *Client) Webhook(ctx context.Context, id ID) (Webhook, error) {
	var out Webhook
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/webhooks/" + esc(string(id))}, &out)
	return out, err
}

// DeleteWebhook deletes the webhook id.
func (c *Client) DeleteWebhook(ctx context.Context, id ID) error {
	_, err := c.call(ctx, request{method: http.MethodDelete, path: "/webhooks/" + esc(string(id))}, nil)
	return err
}

// Deliveries returns the webhook's latest deliveries, newest first; limit 0
// is the service's default.
func (c *Client) Deliveries(ctx context.Context, id ID, limit int) ([]Delivery, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var out struct {
		Deliveries []Delivery `json:"deliveries"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/webhooks/" + esc(string(id)) + "/deliveries", query: q}, &out)
	return out.Deliveries, err
}

// EnableWebhook makes a webhook that was disabled (by a 410, or by failing
// for days) deliver again.
func (c *Client) EnableWebhook(ctx context.Context, id ID) error {
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/webhooks/" + esc(string(id)) + "/enable"}, nil)
	return err
}

// RotateWebhookSecret gives the webhook a new secret and returns the hook
// with it (shown only here). For a day (until PreviousSecretExpiresAt) the
// calls are signed with the new secret and the one it replaced, so that a
// receiver holding either verifies them; then with the new one only.
// Rotating again within the day drops the oldest secret at once. It is
// never sent again once it may have reached the service: a second
// rotation would replace the secret this one returned.
func (c *Client) RotateWebhookSecret(ctx context.Context, id ID) (Webhook, error) {
	var out Webhook
	_, err := c.call(ctx, request{method: http.MethodPost, path: "/webhooks/" + esc(string(id)) + "/rotate", retry: retryUnsent}, &out)
	return out, err
}
