package cache

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/hits"
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
			script: admitScript, width: 1, argWidth: 1, answer: 1, merge: !cluster, growAt: hitsGrowAt, senders: hitsSenders, arrivals: c.arrivals,
			args: []any{strconv.FormatInt(period, 10), strconv.Itoa(rate), strconv.FormatInt(max(window.Milliseconds(), 0), 10)},
		})
	}
	l.admits = limits(o.Rate, o.DedupWindow)
	l.proxyAdmits = limits(o.ProxyRate, 0)
	return l
}

// hitsSenders is how many of the limits' pipelines may travel at once,
// and hitsGrowAt how many hits must wait for the one in flight before a
// second leaves beside it.
//
// What a page hit waits on at 64 connections is the coalescer's round:
// the rounds of the bench's one counter go one after another, so hits a
// second are the hits a round carries over its time, and a round carries
// the hits that reached the coalescer while the one before ran. A hit
// that waits for the limits' pipeline in flight before its own misses the
// next round and waits out a whole round more. With one pipeline (a
// second left only once 64 hits waited, which 64 connections never
// reach) a round carried 27.6 hits, against 31.3 with the limits off;
// with a second leaving once 16 wait, 29.3 (medians of 16 alternated
// 3 s runs, load 20 to 28).
//
// The price is more, smaller script calls: Redis's work on a call is
// mostly the call itself, and the service's its system calls, so the
// same runs spent about 4% more CPU a hit in all (service, MariaDB and
// Redis). A second pipeline as soon as one hit waits carried 3 to 4 hits
// a call and cost the service and Redis about a fifth more; hence 16.
// Two is enough on a big machine too: with one pipeline in Redis and the
// next waiting behind it, Redis never waits on the service. Where the cores are all busy that is what the rate follows;
// where the rounds wait on the database's commits (the two-core machine
// at rest had 12 to 17% of its cores idle under the limits), the larger
// rounds are. The queue's climber cannot be left to choose: it measured
// one pipeline against two while 64 hits had to wait before a second
// left, and so compared one with one; with 16 it kept one in those runs,
// as its rule does for a gain under 4%.
const (
	hitsSenders = 2
	hitsGrowAt  = 16
)

// hitLimits keeps both limits of a client's hits in one small Redis hash
// per client, checked together by admitScript: a page hit costs its limits
// one run of the script, shared with the concurrent hits of its pipeline.
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

// admitScript applies the limits to hits. Each hit names its client's key
// (KEYS[i], under the client's hash tag, so that on Redis Cluster a
// client's state lives on one node: there each hit is a call of its own,
// on one server a pipeline's hits are one call) and the field of its
// visitor's mark on the name (ARGV[3 + i]). The key is a hash of the
// client: field "t" holds its rate limit's state, and each other field a
// mark. One key per client rather than one per limit and mark: a new
// client, which is most hits, costs Redis one key (and one expiry) instead
// of two, which is most of what the limits cost it.
//
// For each hit, in order and atomically: the rate limit (GCRA, the client's
// theoretical arrival time, as redis_rate keeps it, with the whole budget
// as its burst), then, for a hit within the budget, the repeat check: the
// visitor's mark, set for the window if missing or past. Two processes that
// see the same repeat at once still count it once, and a refused hit
// changes nothing. A mark holds when it runs out, in ms, times ten, plus
// what it knows (see below), so that it needs no expiry of its own.
//
// The key lives as long as its newest need: a new mark's window, or the
// client's budget being whole again (a second after an idle client's hit
// at the default 60 a minute). A new mark needs the longest life yet, so
// its PEXPIRE only extends; a hit that only spends budget extends it (GT).
// A client with more marks than markPrune, most of them past, has the past
// ones removed, so that a client that never stays away long enough for its
// key to expire does not grow it without end.
//
// ARGV: the period in µs and the rate (0 and 0: no rate limit), the dedup
// window in ms (0: no dedup), then the hits' fields. For each hit it
// answers one number: minus the µs to wait when the budget is spent, else
// what it knew of the visitor's earlier hit: 0 nothing (a first hit, marked
// now), 1 marked, 2 marked and the counter created (see Created).
//
// Times are µs since 2017 (as in redis_rate), whole numbers exact in a
// Lua number. The script spells the whole numbers it writes with
// string.format's %d (a C long) and passes the window as it came (ARGV[3]):
// a number handed to redis.call as it is, Redis 7.0 spells with
// snprintf's "%.17g", whose exact decimal conversion of a number of 15
// digits was 4% of Redis's CPU under the bench's page hits
// (BenchmarkAdmit: 11.9 Redis µs a hit before, 10.9 after). TIME makes the
// script non-deterministic, which Redis 5 and later replicate by its
// effects.
var admitScript = redis.NewScript(`
local period, rate, window = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local format = string.format
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1483228800) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now / 1000)
local step = 0
if rate > 0 then
  step = period / rate
end
local out = {}
for i = 1, #KEYS do
  local key, field = KEYS[i], ARGV[3 + i]
  local got = redis.call('HMGET', key, 't', field)
  local res, ttl, known, tat, mark = 0, 0, false, nil, nil
  if rate > 0 then
    tat = tonumber(got[1])
    known = tat ~= nil
    if not tat or tat < now then
      tat = now
    end
    tat = math.floor(tat + step + 0.5)
    if now < tat - period then
      res = -math.ceil(tat - period - now)
    else
      ttl = math.ceil((tat - now) / 1000)
    end
  end
  if res == 0 and window > 0 then
    local m = tonumber(got[2])
    if m and math.floor(m / 10) > now_ms then
      res = m % 10
    else
      mark = (now_ms + window) * 10 + 1
    end
  end
  if res >= 0 then
    if mark and rate > 0 then
      local life = ARGV[3]
      if ttl > window then
        life = format('%d', ttl)
      end
      redis.call('HSET', key, 't', format('%d', tat), field, format('%d', mark))
      redis.call('PEXPIRE', key, life)
    elseif mark then
      redis.call('HSET', key, field, format('%d', mark))
      redis.call('PEXPIRE', key, ARGV[3])
    elseif rate > 0 then
      redis.call('HSET', key, 't', format('%d', tat))
      if known then
        redis.call('PEXPIRE', key, format('%d', ttl), 'GT')
      else
        redis.call('PEXPIRE', key, format('%d', ttl))
      end
    end
    if mark and (known or rate == 0) and redis.call('HLEN', key) > ` + markPrune + ` then
      local all = redis.call('HGETALL', key)
      for j = 1, #all, 2 do
        local m = tonumber(all[j + 1])
        if all[j] ~= 't' and (not m or math.floor(m / 10) <= now_ms) then
          redis.call('HDEL', key, all[j])
        end
      end
    end
  end
  out[i] = res
end
return out
`)

// markPrune is how many fields a client's key may hold before its past
// marks are removed: enough that a visitor reading a site page after page
// rarely pays for the sweep, few enough that the sweep stays short.
const markPrune = "32"

// Admit implements hits.Limits. It spends at most one Redis timeout in all,
// also when it waits for a pipeline in flight before its own.
func (l *hitLimits) Admit(ctx context.Context, h hits.Hit) (time.Duration, hits.Earlier, error) {
	since := time.Now()
	admits := l.admits
	if h.Proxy {
		admits = l.proxyAdmits
	}
	res, err := admits.callScriptChain(ctx, since, h.Chain, []string{l.calls.keys.hitClient(h.Client)}, h.Visitor)
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

// createdScript turns a mark of a hit (see admitScript) that has not run
// out into 2, for the rest of its window.
var createdScript = redis.NewScript(`
local t = redis.call('TIME')
local now_ms = (tonumber(t[1]) - 1483228800) * 1000 + math.floor(tonumber(t[2]) / 1000)
local m = tonumber(redis.call('HGET', KEYS[1], ARGV[1]))
if m and math.floor(m / 10) > now_ms and m % 10 == 1 then
  redis.call('HSET', KEYS[1], ARGV[1], string.format('%.0f', m + 1))
end
return 0
`)

// Created implements hits.Limits.
func (l *hitLimits) Created(ctx context.Context, h hits.Hit) error {
	return l.calls.do(ctx, "hit_created", func(ctx context.Context) error {
		return createdScript.Run(ctx, l.calls.rdb, []string{l.calls.keys.hitClient(h.Client)}, h.Visitor).Err()
	})
}

// Forget implements hits.Limits.
func (l *hitLimits) Forget(ctx context.Context, h hits.Hit) error {
	return l.calls.do(ctx, "hit_forget", func(ctx context.Context) error {
		return l.calls.rdb.HDel(ctx, l.calls.keys.hitClient(h.Client), h.Visitor).Err()
	})
}
