package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisFailures are the ways a Redis server fails that its clients must
// survive: gone (connections refused) and hung (nothing answers).
var RedisFailures = []struct {
	Name  string
	Break func(*Redis)
}{
	{"killed", (*Redis).Kill},
	{"frozen", (*Redis).Freeze},
}

// RedisFrozen is how long RunFaults keeps Redis frozen. A Redis call
// without a deadline waits that long, so a test that bounds its requests
// below it (with room for a loaded machine) catches one.
const RedisFrozen = 3 * time.Second

// RunFaults puts r through each fault its clients must ride out, one after
// another, for about six seconds: writes paused (reads still answered),
// the process frozen for RedisFrozen, then killed and started again on the
// same port.
func (r *Redis) RunFaults(tb testing.TB) {
	tb.Helper()
	ctl := redis.NewClient(&redis.Options{Addr: r.Addr(), MaxRetries: -1})
	defer ctl.Close()
	if err := ctl.Do(context.Background(), "CLIENT", "PAUSE", 800, "WRITE").Err(); err != nil {
		tb.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond)
	r.Freeze()
	time.Sleep(RedisFrozen)
	r.Thaw()
	time.Sleep(300 * time.Millisecond)
	r.Kill()
	time.Sleep(800 * time.Millisecond)
	r.Start(tb)
}
