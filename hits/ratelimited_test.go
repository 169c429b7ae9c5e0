package hits_test

import (
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
)

// A rate-limited client is told how long to wait in words that agree with
// the number: "1 second", never "1 seconds".
func TestTheRateLimitMessageSaysSecondsInTheRightNumber(t *testing.T) {
	for _, c := range []struct {
		wait time.Duration
		want string
	}{
		{200 * time.Millisecond, "Too many hits from this address; retry in 1 second."},
		{time.Second, "Too many hits from this address; retry in 1 second."},
		{1500 * time.Millisecond, "Too many hits from this address; retry in 2 seconds."},
		{12 * time.Second, "Too many hits from this address; retry in 12 seconds."},
	} {
		if got := counters.ErrorMessage(&hits.RateLimitedError{RetryAfter: c.wait}); got != c.want {
			t.Errorf("after %v: %q, want %q", c.wait, got, c.want)
		}
	}
}
