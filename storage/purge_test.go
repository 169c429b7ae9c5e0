package storage_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
)

// The periodic purge started by main deletes expired keys on its own and
// leaves live ones.
func TestPurgeKeysEveryDeletesExpiredKeys(t *testing.T) {
	t.Parallel()
	store, db := storetest.OpenStore(t, storetest.MigratedDSN(t))
	ctx := context.Background()
	key := func(k string) counters.Idempotency { return counters.Idempotency{Key: k} }
	store.KeyRetention = time.Millisecond
	for _, k := range []string{"old-1", "old-2", "old-3"} {
		if _, _, err := store.IncrementOnce(ctx, key(k), "sales", 1); err != nil {
			t.Fatal(err)
		}
	}
	store.KeyRetention = time.Hour
	if _, _, err := store.IncrementOnce(ctx, key("live"), "sales", 1); err != nil {
		t.Fatal(err)
	}

	loopCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		store.PurgeKeysEvery(loopCtx, 10*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)))
	}()
	defer func() { stop(); <-done }()

	var keys []string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		keys = keys[:0]
		rows, err := db.QueryContext(ctx, "SELECT idem_key FROM idempotency_record")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k string
			rows.Scan(&k)
			keys = append(keys, k)
		}
		rows.Close()
		if len(keys) == 1 {
			break
		}
	}
	if len(keys) != 1 || keys[0] != "live" {
		t.Errorf("keys left %q, want [live]", keys)
	}
}
