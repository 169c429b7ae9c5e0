package counters

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// DefaultPublicPrefix is the one public prefix when none is configured.
const DefaultPublicPrefix = "hits/"

// PublicNames are the name prefixes that anyone may count page hits on,
// without a token. Everything else stays private.
type PublicNames []string

// Contains reports whether name is under one of the public prefixes.
func (p PublicNames) Contains(name string) bool {
	for _, prefix := range p {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// ValidatePublicPrefix refuses prefixes that would open more than intended:
// the empty prefix would make every counter public, and a reserved prefix
// would let anyone change the service's own counters.
func ValidatePublicPrefix(prefix string) error {
	if prefix == "" {
		return fmt.Errorf("an empty public prefix would make every counter public")
	}
	if err := ValidateName(prefix); err != nil {
		return fmt.Errorf("public prefix %q: %s", prefix, ErrorMessage(err))
	}
	if IsReserved(prefix) {
		return fmt.Errorf("public prefix %q: names starting with %q are reserved", prefix, ReservedPrefix)
	}
	return nil
}

// HitLimiter is the per-client rate limit of the public hit endpoints. The
// limit is shared by every process of the service.
type HitLimiter interface {
	// Allow takes one request from client's budget. It returns 0 when the
	// request may go ahead, or how long the client must wait. An error means
	// the limit could not be checked; callers let the request through.
	Allow(ctx context.Context, client string) (retryAfter time.Duration, err error)
}

// HitDeduper recognises repeat hits of one client on one name within a
// window, across every process of the service.
type HitDeduper interface {
	// First reports whether this is client's first hit on name within the
	// window, and remembers it if so. An error means it could not tell;
	// callers then count the hit.
	First(ctx context.Context, client, name string) (bool, error)
	// Forget undoes First for a hit that could not be counted, so that
	// the client's retry counts.
	Forget(ctx context.Context, client, name string) error
}
