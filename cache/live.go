package cache

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/live"
)

// Live returns the Transport of live updates over this Store's Redis:
// notices of changed counters on one pub/sub channel, and the watched names
// and prefixes of every process in one sorted set scored by expiry. Every
// call but the subscription goes through the Store's deadline and circuit
// breaker; everything it carries is a hint (see live.Transport), so a
// failure is only counted.
func (s *Store) Live() live.Transport {
	return &liveTransport{calls: s.redisCalls, probeEvery: probeEvery}
}

// Messages on the channel: a kind byte, then the body. Names contain no
// control characters, so a newline separates them.
const (
	liveChanged  = 'c' // names, one per line
	liveWatching = 'w' // a process watches something new: read the watches again
	// probePayload, 'p', is a subscription's probe (see subscribe)
)

type liveTransport struct {
	calls      *redisCalls
	probeEvery time.Duration
}

func (t *liveTransport) channel() string { return t.calls.keys.prefix + "live" }
func (t *liveTransport) watches() string { return t.calls.keys.prefix + "live:watches" }

// Publish implements live.Transport.
func (t *liveTransport) Publish(ctx context.Context, names []string) error {
	return t.publish(ctx, "live_publish", string(liveChanged)+strings.Join(names, "\n"))
}

func (t *liveTransport) publish(ctx context.Context, op, msg string) error {
	return t.calls.do(ctx, op, func(ctx context.Context) error {
		return t.calls.rdb.Publish(ctx, t.channel(), msg).Err()
	})
}

// Share implements live.Transport: ZADD GT renews each entry's expiry
// (never shortens another process's), ZREMRANGEBYSCORE drops expired ones,
// then a notice tells the others to read the watches again.
func (t *liveTransport) Share(ctx context.Context, w live.Watch, ttl time.Duration) error {
	score := float64(time.Now().Add(ttl).UnixMilli())
	members := make([]redis.Z, 0, len(w.Names)+len(w.Prefixes))
	for _, n := range w.Names {
		members = append(members, redis.Z{Score: score, Member: "n" + n})
	}
	for _, p := range w.Prefixes {
		members = append(members, redis.Z{Score: score, Member: "p" + p})
	}
	err := t.calls.do(ctx, "live_share", func(ctx context.Context) error {
		_, err := t.calls.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if len(members) > 0 {
				p.ZAddGT(ctx, t.watches(), members...)
			}
			p.ZRemRangeByScore(ctx, t.watches(), "-inf", "("+strconv.FormatInt(time.Now().UnixMilli(), 10))
			return nil
		})
		return err
	})
	if err != nil {
		return err
	}
	return t.publish(ctx, "live_publish", string(liveWatching))
}

// Watched implements live.Transport.
func (t *liveTransport) Watched(ctx context.Context) (live.Watch, error) {
	var w live.Watch
	err := t.calls.do(ctx, "live_watched", func(ctx context.Context) error {
		members, err := t.calls.rdb.ZRangeByScore(ctx, t.watches(), &redis.ZRangeBy{
			Min: strconv.FormatInt(time.Now().UnixMilli(), 10), Max: "+inf"}).Result()
		if err != nil {
			return err
		}
		for _, m := range members {
			switch {
			case strings.HasPrefix(m, "n"):
				w.Names = append(w.Names, m[1:])
			case strings.HasPrefix(m, "p"):
				w.Prefixes = append(w.Prefixes, m[1:])
			}
		}
		return nil
	})
	return w, err
}

// Subscribe implements live.Transport (see subscribe), telling l.Missed
// after each subscription is confirmed.
func (t *liveTransport) Subscribe(ctx context.Context, l live.Listener) {
	t.calls.subscribe(ctx, t.channel(), t.probeEvery, l.Missed, func(payload string) { t.handle(payload, l) })
}

func (t *liveTransport) handle(payload string, l live.Listener) {
	if payload == "" {
		return
	}
	switch payload[0] {
	case liveChanged:
		l.Changed(strings.Split(payload[1:], "\n"))
	case liveWatching:
		l.Watching()
	}
}
