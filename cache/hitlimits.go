package cache

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"countersvc/hits"
)

// HitLimits are the settings of the page-hit abuse limits.
type HitLimits struct {
	Rate        int           // hits per client per RateWindow; 0 turns the rate limit off
	RateWindow  time.Duration // the rate limit's window
	DedupWindow time.Duration // repeat hits within it are not counted; 0 turns the dedup off
}

// NewHitLimits returns the page-hit limits, kept in the Redis of c and
// called as c calls it: through its circuit breaker, under its key prefix.
// A Redis that the cache has given up on is then skipped by the limits at
// once too, and hits.Service lets the hits through. With both limits off it
// returns nil. The state of the limits lives in Redis alone, so that every
// process of the service shares it; there are none without Redis.
func NewHitLimits(c *Store, o HitLimits) hits.Limits {
	if o.Rate <= 0 && o.DedupWindow <= 0 {
		return nil
	}
	l := &hitLimits{calls: c.redisCalls, keys: newClientKeys(c.redisCalls)}
	l.admits = pipeline{calls: c.redisCalls, op: "hit_limits", scripts: []*redis.Script{admitScript}}
	rate, period := 0, int64(0)
	if o.Rate > 0 {
		rate, period = o.Rate, o.RateWindow.Microseconds()
	}
	window := max(o.DedupWindow.Milliseconds(), 0)
	l.args = []any{strconv.FormatInt(period, 10), strconv.Itoa(rate), strconv.FormatInt(window, 10)}
	return l
}

// hitLimits keeps both limits of a hit in two small Redis keys of the
// client, checked together by admitScript: a page hit costs its limits one
// command, and the commands of concurrent hits travel as one pipeline.
type hitLimits struct {
	calls  *redisCalls
	keys   *clientKeys
	admits pipeline
	args   []any // of admitScript: period (µs), rate, dedup window (ms)
}

// admitScript is the rate limit (GCRA, one key holding the client's
// theoretical arrival time, as redis_rate does it, with the whole budget as
// its burst) and then, for a hit within the budget, the repeat check (the
// visitor's mark of the name, set for the window if missing), in one atomic
// step: two processes that see the same repeat at once still count it once,
// and a refused hit marks nothing.
//
// KEYS: the client's rate key, the visitor's mark of the name; both carry
// the client's hash tag, so that they live on one Redis Cluster node.
// ARGV: the period in µs and the rate (0 and 0: no rate limit), the dedup
// window in ms (0: no dedup).
// It answers {0, µs to wait} when the budget is spent, else {1, earlier}:
// 0 no mark (a first hit, marked now), 1 marked, 2 marked and the counter
// created (see Created).
//
// Times are µs since 2017 (as in redis_rate), exact in a Lua number; TIME
// makes the script non-deterministic, hence replicate_commands (needed
// before Redis 5, a no-op since 7).
var admitScript = redis.NewScript(`
redis.replicate_commands()
local rate = tonumber(ARGV[2])
if rate > 0 then
  local period = tonumber(ARGV[1])
  local t = redis.call('TIME')
  local now = (tonumber(t[1]) - 1483228800) * 1000000 + tonumber(t[2])
  local tat = tonumber(redis.call('GET', KEYS[1]) or now)
  if tat < now then
    tat = now
  end
  local new_tat = tat + period / rate
  local allow_at = new_tat - period
  if now < allow_at then
    return {0, math.ceil(allow_at - now)}
  end
  redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
end
if ARGV[3] ~= '0' then
  local mark = redis.call('GET', KEYS[2])
  if mark then
    return {1, tonumber(mark)}
  end
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
end
return {1, 0}
`)

// Admit implements hits.Limits. It spends at most one Redis timeout in all,
// also when it waits for a pipeline in flight before its own.
func (l *hitLimits) Admit(ctx context.Context, h hits.Hit) (time.Duration, hits.Earlier, error) {
	ctx, cancel := context.WithTimeout(ctx, l.calls.timeout)
	defer cancel()
	rateKey, seenKey, err := l.hitKeys(ctx, h)
	if err != nil {
		return 0, hits.None, err
	}
	cmd, err := l.admits.call(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		return admitScript.EvalSha(ctx, p, []string{rateKey, seenKey}, l.args...)
	})
	if err != nil {
		return 0, hits.None, err
	}
	res, err := cmd.(*redis.Cmd).Int64Slice()
	if err != nil {
		return 0, hits.None, err
	}
	switch {
	case len(res) != 2:
	case res[0] == 0:
		return time.Duration(max(res[1], 1)) * time.Microsecond, hits.None, nil
	case res[1] >= int64(hits.None) && res[1] <= int64(hits.Created):
		return 0, hits.Earlier(res[1]), nil
	}
	return 0, hits.None, errUnexpected
}

// Created implements hits.Limits: the mark, if it is still there, becomes 2
// for the rest of its window.
func (l *hitLimits) Created(ctx context.Context, h hits.Hit) error {
	ctx, cancel := context.WithTimeout(ctx, l.calls.timeout)
	defer cancel()
	_, seenKey, err := l.hitKeys(ctx, h)
	if err != nil {
		return err
	}
	cmd, err := l.admits.call(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		return p.SetArgs(ctx, seenKey, int(hits.Created), redis.SetArgs{Mode: "XX", KeepTTL: true})
	})
	if err != nil {
		return err
	}
	if err := cmd.Err(); err != nil && err != redis.Nil { // Nil: the mark has expired
		return err
	}
	return nil
}

// Forget implements hits.Limits.
func (l *hitLimits) Forget(ctx context.Context, h hits.Hit) error {
	_, seenKey, err := l.hitKeys(ctx, h)
	if err != nil {
		return err
	}
	return l.calls.do(ctx, "hit_forget", func(ctx context.Context) error {
		return l.calls.rdb.Del(ctx, seenKey).Err()
	})
}

// hitKeys are the keys of h's client budget and of h's mark, salted hashes
// (see clientKeys).
func (l *hitLimits) hitKeys(ctx context.Context, h hits.Hit) (rateKey, seenKey string, err error) {
	client, err := l.keys.key(ctx, h.Client)
	if err != nil {
		return "", "", err
	}
	seen, err := l.keys.key(ctx, h.Visitor, h.Name)
	if err != nil {
		return "", "", err
	}
	return l.calls.keys.hitRate(client), l.calls.keys.hitSeen(client, seen), nil
}
