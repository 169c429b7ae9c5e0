package cache

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClientKeyFunc exposes clientKeys with a fake clock to the tests.
func ClientKeyFunc(rdb redis.UniversalClient, now func() time.Time) func(context.Context, ...string) (string, error) {
	k := newClientKeys(rdb)
	k.now = now
	return k.key
}
