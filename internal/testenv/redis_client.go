package testenv

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// DeadlineClient connects to r as the service does: with
// ContextTimeoutEnabled, so a call on a hung server ends at its context's
// deadline instead of go-redis's own read timeout of seconds. It is closed
// when the test ends.
func (r *Redis) DeadlineClient(tb testing.TB) *redis.Client {
	tb.Helper()
	opt, err := redis.ParseURL(r.URL())
	if err != nil {
		tb.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	tb.Cleanup(func() { rdb.Close() })
	return rdb
}
