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
	// ProxyRate is the budget of a known image proxy's hits per proxy
	// address and counter per RateWindow; 0 turns it off. They are never
	// taken for repeats.
	ProxyRate int
}

// NewHitLimits returns the page-hit limits, kept in the Redis of c and
// called as c calls it: through its circuit breaker, under its key prefix.
// A Redis that the cache has given up on is then skipped by the limits at
// once too, and hits.Service lets the hits through. With both limits off it
// returns nil. The state of the limits lives in Redis alone, so that every
// process of the service shares it; there are none without Redis.
func NewHitLimits(c *Store, o HitLimits) hits.Limits {
	if o.Rate <= 0 && o.DedupWindow <= 0 && o.ProxyRate <= 0 {
		return nil
	}
	l := &hitLimits{calls: c.redisCalls, others: o.Rate > 0 || o.DedupWindow > 0, proxies: o.ProxyRate > 0}
	_, cluster := c.rdb.(*redis.ClusterClient)
	limits := func(rate int, window time.Duration) *pipeline {
		var period int64
		if rate <= 0 {
			rate = 0
		} else {
			period = o.RateWindow.Microseconds()
		}
		return newPipeline(pipeline{
			calls: c.redisCalls, op: "hit_limits",
			script: admitScript, width: 2, answer: 1, merge: !cluster,
			args: []any{strconv.FormatInt(period, 10), strconv.Itoa(rate), strconv.FormatInt(max(window.Milliseconds(), 0), 10)},
		})
	}
	l.admits = limits(o.Rate, o.DedupWindow)
	l.proxyAdmits = limits(o.ProxyRate, 0)
	return l
}

// hitLimits keeps both limits of a hit in two small Redis keys of the
// client, checked together by admitScript: a page hit costs its limits one
// run of the script, shared with the concurrent hits of its pipeline.
type hitLimits struct {
	calls       *redisCalls
	admits      *pipeline // of admitScript
	proxyAdmits *pipeline // the same for image proxies' hits: their own budget, no repeats
	// Whether admits and proxyAdmits check anything: a limit that is off
	// costs a hit no round trip.
	others, proxies bool
}

// Checks implements hits.Limits.
func (l *hitLimits) Checks(proxy bool) bool {
	if proxy {
		return l.proxies
	}
	return l.others
}

// admitScript applies the limits to hits, each named by two keys: the
// client's rate key and the visitor's mark of the name. Both carry the
// client's hash tag, so that on Redis Cluster a hit's keys live on one node
// (there each hit is a call of its own; on one server a pipeline's hits are
// one call).
//
// For each hit, in order and atomically: the rate limit (GCRA, one key
// holding the client's theoretical arrival time, as redis_rate does it,
// with the whole budget as its burst), then, for a hit within the budget,
// the repeat check: the visitor's mark, set for the window if missing. Two
// processes that see the same repeat at once still count it once, and a
// refused hit marks nothing.
//
// ARGV: the period in µs and the rate (0 and 0: no rate limit), the dedup
// window in ms (0: no dedup). For each hit it answers one number: minus the
// µs to wait when the budget is spent, else what it knew of the visitor's
// earlier hit: 0 nothing (a first hit, marked now), 1 marked, 2 marked and
// the counter created (see Created).
//
// A client without a key, which is most of them (a key lasts until its
// client's budget is whole again: a second after an idle client's hit at
// the default 60 a minute), is within its budget and starts at now: its
// key is set by one SET NX, and the GET and the arithmetic only run for a
// client that has one. That saves a third of the script's commands on most
// hits.
//
// Times are µs since 2017 (as in redis_rate), exact in a Lua number. TIME
// makes the script non-deterministic, which Redis 5 and later replicate by
// its effects.
var admitScript = redis.NewScript(`
local period, rate, window = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local now, step, fresh, fresh_ttl
if rate > 0 then
  local t = redis.call('TIME')
  now = (tonumber(t[1]) - 1483228800) * 1000000 + tonumber(t[2])
  step = period / rate
  fresh, fresh_ttl = string.format('%.0f', now + step), math.ceil(step / 1000)
end
local out, n = {}, 0
for i = 1, #KEYS, 2 do
  n = n + 1
  out[n] = 0
  if rate > 0 and not redis.call('SET', KEYS[i], fresh, 'NX', 'PX', fresh_ttl) then
    local tat = tonumber(redis.call('GET', KEYS[i]) or now)
    if tat < now then
      tat = now
    end
    local new_tat = tat + step
    local allow_at = new_tat - period
    if now < allow_at then
      out[n] = -math.ceil(allow_at - now)
    else
      redis.call('SET', KEYS[i], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000))
    end
  end
  if out[n] == 0 and window ~= '0' and not redis.call('SET', KEYS[i + 1], '1', 'NX', 'PX', window) then
    out[n] = tonumber(redis.call('GET', KEYS[i + 1])) or 1
  end
end
return out
`)

// Admit implements hits.Limits. It spends at most one Redis timeout in all,
// also when it waits for a pipeline in flight before its own.
func (l *hitLimits) Admit(ctx context.Context, h hits.Hit) (time.Duration, hits.Earlier, error) {
	since := time.Now()
	rateKey, seenKey := l.hitKeys(h)
	admits := l.admits
	if h.Proxy {
		admits = l.proxyAdmits
	}
	res, err := admits.callScript(ctx, since, rateKey, seenKey)
	switch {
	case err != nil:
		return 0, hits.None, err
	case res[0] < 0:
		return time.Duration(-res[0]) * time.Microsecond, hits.None, nil
	case res[0] <= int64(hits.Created):
		return 0, hits.Earlier(res[0]), nil
	}
	return 0, hits.None, errUnexpected
}

// createdScript turns the mark of a hit into 2 (see admitScript), if it is
// still there, for the rest of its window.
var createdScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) then
  redis.call('SET', KEYS[1], '2', 'KEEPTTL')
end
return 0
`)

// Created implements hits.Limits.
func (l *hitLimits) Created(ctx context.Context, h hits.Hit) error {
	_, seenKey := l.hitKeys(h)
	return l.calls.do(ctx, "hit_created", func(ctx context.Context) error {
		return createdScript.Run(ctx, l.calls.rdb, []string{seenKey}).Err()
	})
}

// Forget implements hits.Limits.
func (l *hitLimits) Forget(ctx context.Context, h hits.Hit) error {
	_, seenKey := l.hitKeys(h)
	return l.calls.do(ctx, "hit_forget", func(ctx context.Context) error {
		return l.calls.rdb.Del(ctx, seenKey).Err()
	})
}

// hitKeys are the keys of h's client budget and of h's mark. h names its
// client and visitor by identifiers of the day (see hits.Hit), so the keys
// hold no address.
func (l *hitLimits) hitKeys(h hits.Hit) (rateKey, seenKey string) {
	return l.calls.keys.hitRate(h.Client), l.calls.keys.hitSeen(h.Client, h.Visitor)
}
