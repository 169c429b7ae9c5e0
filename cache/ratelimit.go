package cache

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// RateLimiter is a per-client rate limit shared by every process of the
// service: the state is one small Redis key per client, updated by
// redis_rate's GCRA script in a single atomic round trip, and it expires as
// soon as the client's budget is full again.
type RateLimiter struct {
	limiter *redis_rate.Limiter
	limit   redis_rate.Limit
	keys    *clientKeys
	timeout time.Duration
}

// NewRateLimiter allows each client rate requests per period, all of them
// at once if it likes (the burst is the whole budget), then one every
// period/rate. Each Redis call gives up after timeout: the limit protects
// the service, it must never slow it down. rdb must be created with
// ContextTimeoutEnabled, otherwise go-redis waits out its own read timeout
// (seconds) when Redis hangs.
func NewRateLimiter(rdb redis.UniversalClient, rate int, period, timeout time.Duration) *RateLimiter {
	return &RateLimiter{
		limiter: redis_rate.NewLimiter(rdb),
		limit:   redis_rate.Limit{Rate: rate, Burst: rate, Period: period},
		keys:    newClientKeys(rdb),
		timeout: timeout,
	}
}

// Allow implements counters.HitLimiter.
func (l *RateLimiter) Allow(ctx context.Context, client string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	key, err := l.keys.key(ctx, client)
	if err != nil {
		return 0, err
	}
	// redis_rate prefixes its keys with "rate:".
	res, err := l.limiter.Allow(ctx, "counters:hits:"+key, l.limit)
	if err != nil {
		return 0, err
	}
	if res.Allowed > 0 {
		return 0, nil
	}
	return res.RetryAfter, nil
}
