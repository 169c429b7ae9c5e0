package hits

import (
	"context"
	"time"
)

// Limiter is the per-client rate limit of the public hit endpoints. The
// limit is shared by every process of the service.
type Limiter interface {
	// Allow takes one request from client's budget. It returns 0 when the
	// request may go ahead, or how long the client must wait. An error means
	// the limit could not be checked; callers let the request through.
	Allow(ctx context.Context, client string) (retryAfter time.Duration, err error)
}

// Deduper recognises repeat hits of one client on one name within a
// window, across every process of the service.
type Deduper interface {
	// First reports whether this is client's first hit on name within the
	// window, and remembers it if so. An error means it could not tell;
	// callers then count the hit.
	First(ctx context.Context, client, name string) (bool, error)
	// Forget undoes First for a hit that could not be counted, so that
	// the client's retry counts.
	Forget(ctx context.Context, client, name string) error
}
