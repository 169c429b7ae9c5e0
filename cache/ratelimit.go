package cache

import (
	"context"
	"time"

	"github.com/go-redis/redis_rate/v10"
)

// rateLimiter is a per-client rate limit shared by every process of the
// service: the state is one small Redis key per client, updated by
// redis_rate's GCRA script in a single atomic round trip, and it expires as
// soon as the client's budget is full again.
type rateLimiter struct {
	calls   *redisCalls
	limiter *redis_rate.Limiter
	limit   redis_rate.Limit
	keys    *clientKeys
}

// newRateLimiter allows each client rate requests per period, all of them
// at once if it likes (the burst is the whole budget), then one every
// period/rate.
func newRateLimiter(calls *redisCalls, keys *clientKeys, rate int, period time.Duration) *rateLimiter {
	return &rateLimiter{
		calls:   calls,
		limiter: redis_rate.NewLimiter(calls.rdb),
		limit:   redis_rate.Limit{Rate: rate, Burst: rate, Period: period},
		keys:    keys,
	}
}

// Allow implements hits.Limiter.
func (l *rateLimiter) Allow(ctx context.Context, client string) (time.Duration, error) {
	h, err := l.keys.key(ctx, client)
	if err != nil {
		return 0, err
	}
	var res *redis_rate.Result
	err = l.calls.do(ctx, "rate_limit", func(ctx context.Context) error {
		var err error
		res, err = l.limiter.Allow(ctx, l.calls.keys.hitRate(h), l.limit)
		return err
	})
	if err != nil {
		return 0, err
	}
	if res.Allowed > 0 {
		return 0, nil
	}
	return res.RetryAfter, nil
}
