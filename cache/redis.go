package cache

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// consecutiveFailures opens the circuit: enough to ride out a single
// dropped connection, few enough that a dead Redis costs only a handful of
// requests one timeout each.
const consecutiveFailures = 3

// redisCalls is the one way this package calls Redis. The read cache, the
// page-hit limits all go through do, so every call has the
// same short deadline, one circuit breaker tells all of them at once that
// Redis is failing (and they skip it until the cooldown is over), and every
// key lives under one prefix (keys), so that a Redis shared with other
// programs holds nothing of ours outside it.
type redisCalls struct {
	rdb     redis.UniversalClient
	timeout time.Duration
	keys    keyspace
	breaker *gobreaker.TwoStepCircuitBreaker[struct{}]
	errors  *prometheus.CounterVec // failed calls, by op
	log     *slog.Logger
}

// newRedisCalls takes the deadline, cooldown, key prefix and log from o,
// which must have its defaults applied.
func newRedisCalls(rdb redis.UniversalClient, o Options, errs *prometheus.CounterVec) *redisCalls {
	r := &redisCalls{rdb: rdb, timeout: o.Timeout, keys: keyspace{prefix: o.KeyPrefix}, errors: errs, log: o.Log}
	r.breaker = gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreaker.Settings{
		Name:        "redis",
		MaxRequests: 1,
		Timeout:     o.Cooldown,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= consecutiveFailures },
		// A caller that gave up says nothing about Redis.
		IsExcluded: func(err error) bool { return errors.Is(err, context.Canceled) },
		OnStateChange: func(_ string, from, to gobreaker.State) {
			o.Log.Warn("redis cache circuit", "from", from.String(), "to", to.String())
		},
	})
	return r
}

// errSkipped stands for a Redis call not made because the circuit is open.
var errSkipped = errors.New("cache: Redis skipped while the circuit is open")

// do runs one Redis call under its own deadline, through the circuit
// breaker. fn must map redis.Nil to whatever "not there" means to it.
func (r *redisCalls) do(ctx context.Context, op string, fn func(context.Context) error) error {
	done, err := r.breaker.Allow()
	if err != nil {
		return errSkipped
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	err = fn(ctx)
	cancel()
	done(err)
	if err != nil {
		r.errors.WithLabelValues(op).Inc()
		r.log.Debug("redis cache call failed", "op", op, "error", err.Error())
	}
	return err
}

// ping asks Redis itself, past the breaker: readiness should report what
// Redis says now, not what the breaker last concluded, and a probe should
// not move the breaker either way. Each ping has the calls' deadline (the
// client's socket deadlines are that short anyway); one that times out is
// sent again until ctx ends, the check's own deadline (/readyz gives each
// dependency a second). On a busy machine a ping is now and then answered
// after the calls' 100 ms, and /readyz reported such a Redis down. Without
// a deadline in ctx, one ping decides.
func (r *redisCalls) ping(ctx context.Context) error {
	_, again := ctx.Deadline()
	for {
		pctx, cancel := context.WithTimeout(ctx, r.timeout)
		err := r.rdb.Ping(pctx).Err()
		cancel()
		var ne net.Error
		timedOut := errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
		if !timedOut || !again || ctx.Err() != nil {
			return err
		}
	}
}

func (r *redisCalls) circuitOpen() bool { return r.breaker.State() != gobreaker.StateClosed }
