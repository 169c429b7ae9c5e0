package client

import (
	"context"
	"net/http"
)

// Hit counts a page hit of name, which must be under one of the service's
// public prefixes (hits/ by default), and returns the value: what the
// page-hit snippet does, for a program that serves the page itself. The
// service's rules apply: a repeat from the same client within its window
// answers the value without counting, and past the client's rate limit the
// answer is RateLimited (retried after its Retry-After when the context
// leaves room). It is not retried after a lost answer, which would count
// the hit twice.
func (c *Client) Hit(ctx context.Context, name string) (int64, error) {
	var out Value
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/hits/" + esc(name), retry: retryUnsent}, &out)
	return out.Value, err
}
