package cache

import (
	"context"
	"time"
)

// deduper remembers, for a window, which client has hit which name, so that
// a reload or a double-loaded snippet counts once. Each pair is one Redis key
// (a salted hash, see clientKeys) that expires with the window.
type deduper struct {
	calls  *redisCalls
	keys   *clientKeys
	window time.Duration
}

// First implements hits.Deduper: SET NX decides atomically, so two
// processes that see the same repeat at once still count it once.
func (d *deduper) First(ctx context.Context, client, name string) (bool, error) {
	key, err := d.key(ctx, client, name)
	if err != nil {
		return false, err
	}
	var first bool
	err = d.calls.do(ctx, "dedup", func(ctx context.Context) error {
		var err error
		first, err = d.calls.rdb.SetNX(ctx, key, 1, d.window).Result()
		return err
	})
	return first, err
}

// Forget implements hits.Deduper.
func (d *deduper) Forget(ctx context.Context, client, name string) error {
	key, err := d.key(ctx, client, name)
	if err != nil {
		return err
	}
	return d.calls.do(ctx, "dedup_forget", func(ctx context.Context) error {
		return d.calls.rdb.Del(ctx, key).Err()
	})
}

func (d *deduper) key(ctx context.Context, client, name string) (string, error) {
	h, err := d.keys.key(ctx, client, name)
	return d.calls.keys.hitSeen(h), err
}
