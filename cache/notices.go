package cache

import "context"

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

// Listen calls fn for each notice until ctx ends. go-redis's
// subscription connects again by itself after Redis was away (what was
// published meanwhile is lost: see Notices).
func (n *Notices) Listen(ctx context.Context, fn func(ctx context.Context)) {
	ps := n.calls.rdb.Subscribe(ctx, n.channel)
	defer ps.Close()
	ch := ps.Channel()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch:
			fn(ctx)
		}
	}
}
