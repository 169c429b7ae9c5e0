package cache

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// LogRedisTo sends go-redis's own messages (a failed dial, a dropped
// connection) to log at debug level instead of stderr: during an outage
// they repeat on every attempt, and the cache already reports the outage
// once, at warn level, when its circuit opens. go-redis has one logger per
// process, so this is for main to call.
func LogRedisTo(log *slog.Logger) { redis.SetLogger(redisLogger{log}) }

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	if l.log.Enabled(ctx, slog.LevelDebug) {
		l.log.DebugContext(ctx, "go-redis", "message", fmt.Sprintf(format, v...))
	}
}
