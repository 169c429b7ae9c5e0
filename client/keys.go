package client

import (
	"context"
	"net/http"
	"time"
)

// Key is an API key: who may touch which counters, boards and tickets.
type Key struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Scopes     []string   `json:"scopes"`   // read, write, admin
	Prefixes   []string   `json:"prefixes"` // counter names it may touch; "" is every non-reserved name
	Companies  []int64    `json:"companies"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	// Secret is the bearer token, in CreateKey's answer only: the service
	// keeps a hash of it and never shows it again.
	Secret string `json:"secret,omitempty"`
}

// KeyRequest describes a new API key.
type KeyRequest struct {
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	Prefixes  []string   `json:"prefixes,omitempty"`
	Companies []int64    `json:"companies,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
}

// CreateKey makes an API key (admin only) and returns it with its secret.
func (c *Client) CreateKey(ctx context.Context, k KeyRequest) (Key, error) {
	body, err := jsonBody(k)
	if err != nil {
		return Key{}, err
	}
	var out Key
	_, err = c.call(ctx, request{method: http.MethodPost, path: "/keys", body: body, retry: retryUnsent}, &out)
	return out, err
}

// Keys lists the API keys, without secrets.
func (c *Client) Keys(ctx context.Context) ([]Key, error) {
	var out struct {
		Keys []Key `json:"keys"`
	}
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/keys"}, &out)
	return out.Keys, err
}

// Key returns the API key id, without its secret. Errors: NotFound.
func (c *Client) Key(ctx context.Context, id int64) (Key, error) {
	var out Key
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/keys/" + itoa(id)}, &out)
	return out, err
}

// DeleteKey revokes the API key id: every process of the service refuses
// it within a second.
func (c *Client) DeleteKey(ctx context.Context, id int64) error {
	_, err := c.call(ctx, request{method: http.MethodDelete, path: "/keys/" + itoa(id)}, nil)
	return err
}
