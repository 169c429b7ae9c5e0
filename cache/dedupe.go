package cache

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Deduper remembers, for a window, which client has hit which name, so that
// a reload or a double-loaded snippet counts once. Each pair is one Redis key
// (a salted hash, see clientKeys) that expires with the window.
type Deduper struct {
	rdb     redis.UniversalClient
	keys    *clientKeys
	window  time.Duration
	timeout time.Duration
}

// NewDeduper treats repeat hits within window as one. Each Redis call gives
// up after timeout; rdb must be created with ContextTimeoutEnabled (see
// NewRateLimiter).
func NewDeduper(rdb redis.UniversalClient, window, timeout time.Duration) *Deduper {
	return &Deduper{rdb: rdb, keys: newClientKeys(rdb), window: window, timeout: timeout}
}

// First implements counters.HitDeduper: SET NX decides atomically, so two
// processes that see the same repeat at once still count it once.
func (d *Deduper) First(ctx context.Context, client, name string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	key, err := d.key(ctx, client, name)
	if err != nil {
		return false, err
	}
	return d.rdb.SetNX(ctx, key, 1, d.window).Result()
}

// Forget implements counters.HitDeduper.
func (d *Deduper) Forget(ctx context.Context, client, name string) error {
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	defer cancel()
	key, err := d.key(ctx, client, name)
	if err != nil {
		return err
	}
	return d.rdb.Del(ctx, key).Err()
}

func (d *Deduper) key(ctx context.Context, client, name string) (string, error) {
	h, err := d.keys.key(ctx, client, name)
	return "counters:hits:seen:" + h, err
}
