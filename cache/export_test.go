package cache

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClientKeyFunc exposes clientKeys with a fake clock to the tests.
func ClientKeyFunc(rdb redis.UniversalClient, now func() time.Time) func(context.Context, ...string) (string, error) {
	var o Options
	o.defaults()
	k := newClientKeys(newRedisCalls(rdb, o, newMetrics(nil, nil).errors))
	k.now = now
	return k.key
}
