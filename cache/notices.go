package cache

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// Notices is a channel of this Store's Redis on which the processes of the
// service tell each other that something each keeps a copy of has changed
// (the webhooks' hooks). A notice is a hint that makes the copies fresh
// sooner, no more: pub/sub drops what is published while a subscriber is
// disconnected, so whoever keeps a copy also reads it again on its own.
type Notices struct {
	calls   *redisCalls
	channel string
}

// Notices returns the channel of topic.
func (s *Store) Notices(topic string) *Notices {
	return &Notices{calls: s.redisCalls, channel: s.keys.prefix + "notices:" + topic}
}

// Notify tells the other processes, through the Store's deadline and
// circuit breaker; a failure is only counted.
func (n *Notices) Notify(ctx context.Context) {
	n.calls.do(ctx, "notify", func(ctx context.Context) error {
		return n.calls.rdb.Publish(ctx, n.channel, "changed").Err()
	})
}

// Listen calls fn for each notice until ctx ends, and after each
// subscription is confirmed, since notices published while it was away are
// lost (see subscribe).
func (n *Notices) Listen(ctx context.Context, fn func(ctx context.Context)) {
	heard := func() { fn(ctx) }
	n.calls.subscribe(ctx, n.channel, probeEvery, heard, func(string) { heard() })
}

// probeEvery is how long a subscription may stay silent before it is
// probed (see subscribe).
const probeEvery = time.Second

// probePayload is the message that subscribe publishes to probe a silent
// subscription; it is not handed on.
const probePayload = "p"

// subscribe keeps a subscription to channel until ctx ends: it subscribes,
// and subscribes again whenever the subscription fails or stays silent
// past a probe, calling subscribed after each subscription is confirmed and
// message with every payload but a probe's. A subscription that has heard
// nothing for probeEvery publishes a probe through the client's own
// connection, which must come back within two more such periods: pub/sub
// goes silent without an error after a Sentinel failover (the subscription
// stays on the old primary, which no longer gets the publishes: centrifugo
// #1189, redis#6545), and a paused Redis says nothing either.
func (r *redisCalls) subscribe(ctx context.Context, channel string, probeEvery time.Duration, subscribed func(), message func(payload string)) {
	for ctx.Err() == nil {
		ps := r.rdb.Subscribe(ctx, channel)
		r.receive(ctx, ps, channel, probeEvery, subscribed, message)
		ps.Close()
		select { // a Redis that is down is tried again, not hammered
		case <-ctx.Done():
		case <-time.After(probeEvery / 4):
		}
	}
}

// receive reads ps until it fails or stays silent past its probe.
func (r *redisCalls) receive(ctx context.Context, ps *redis.PubSub, channel string, probeEvery time.Duration, subscribed func(), message func(string)) {
	heard, probed := time.Now(), time.Time{}
	for {
		msg, err := ps.ReceiveTimeout(ctx, probeEvery/2)
		now := time.Now()
		var ne interface{ Timeout() bool }
		switch {
		case err == nil:
			heard = now
		case ctx.Err() != nil:
			return
		case errors.As(err, &ne) && ne.Timeout():
		default:
			r.errors.WithLabelValues("subscribe").Inc()
			return
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				subscribed()
			}
		case *redis.Message:
			if m.Payload != probePayload {
				message(m.Payload)
			}
		}
		silent := now.Sub(heard)
		if silent > 3*probeEvery {
			r.errors.WithLabelValues("probe").Inc()
			return
		}
		if silent > probeEvery && now.Sub(probed) > probeEvery {
			probed = now
			r.do(ctx, "probe", func(ctx context.Context) error {
				return r.rdb.Publish(ctx, channel, probePayload).Err()
			})
		}
	}
}
