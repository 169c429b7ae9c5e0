package cache

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// LogRedisTo sends go-redis's own messages (a failed dial, a dropped
// connection) to log at debug level instead of stderr: during an outage
// they repeat on every attempt, and the cache already reports the outage
// once, at warn level, when its circuit opens. go-redis has one logger per
// process, so this is for main to call. The process's logger is set once,
// and later calls only swap the slog.Logger behind it: a second set while
// a client logs would be a data race (tests start several services in one
// process, side by side).
func LogRedisTo(log *slog.Logger) {
	redisLog.Store(log)
	redisLogSet.Do(func() { redis.SetLogger(redisLogger{}) })
}

var (
	redisLog    atomic.Pointer[slog.Logger]
	redisLogSet sync.Once
)

type redisLogger struct{}

func (redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if l := redisLog.Load(); l.Enabled(ctx, slog.LevelDebug) {
		l.DebugContext(ctx, "go-redis", "message", fmt.Sprintf(format, v...))
	}
}
