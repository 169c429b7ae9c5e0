package wire_test

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// Close ends everything Build started: the background jobs of every
// capability, the cache's and the database's own goroutines. A service
// built and closed leaves as many goroutines as there were before, with
// Redis and without, after it served a request that started the coalescer
// and the Redis pipelines.
func TestNoGoroutineOutlivesClose(t *testing.T) {
	redis := testenv.StartRedis(t)
	for _, tc := range []struct {
		name, redisURL string
	}{
		{"without Redis", ""},
		{"with Redis", redis.URL()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := wire.Defaults()
			cfg.MySQL.DSN, cfg.Cache.RedisURL = testenv.MySQLDSN(t), tc.redisURL
			before := runtime.NumGoroutine()
			svc, err := wire.Build(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if _, err := svc.Counters.Increment(ctx, "goroutines/a", 1); err != nil {
				t.Fatal(err)
			}
			if err := svc.Close(); err != nil {
				t.Fatal(err)
			}
			// Some goroutines end just after Close returns (a connection's
			// reader seeing its socket closed): wait for them, briefly.
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if after := runtime.NumGoroutine(); after > before {
				buf := make([]byte, 1<<20)
				stacks := string(buf[:runtime.Stack(buf, true)])
				t.Fatalf("%d goroutines before Build, %d after Close:\n%s", before, after, keepOurs(stacks))
			}
		})
	}
}

// keepOurs keeps the stacks that run the service's own code.
func keepOurs(stacks string) string {
	var kept []string
	for _, s := range strings.Split(stacks, "\n\n") {
		if strings.Contains(s, "github.com/countersvc/countersvc/") && !strings.Contains(s, "testing.tRunner") {
			kept = append(kept, s)
		}
	}
	return strings.Join(kept, "\n\n")
}
