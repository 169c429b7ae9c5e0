package storage_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
)

// Requests retrying one idempotency key while its first request is still
// running wait in the process, not on the key's row lock with a pooled
// connection each: the rest of the pool keeps serving other requests, and
// when the first request ends, the others replay its answer.
func TestRequestsWaitingOnOneKeyLeaveThePoolToOthers(t *testing.T) {
	t.Parallel()
	dsn := storetest.MigratedDSN(t)
	s, db := storetest.OpenStore(t, dsn)
	db.SetMaxOpenConns(3)
	ctx := context.Background()
	key := counters.Idempotency{Key: "retried", Fingerprint: [32]byte{1}}

	// Another connection, outside the pool, plays the first request: it has
	// claimed the key and not yet committed.
	_, other := storetest.OpenStore(t, dsn)
	first, err := other.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Rollback()
	if _, err := first.ExecContext(ctx, `INSERT INTO idempotency_record (idem_key, fingerprint, result, created_at, expires_at)
		VALUES (?, ?, '', NOW(6), NOW(6) + INTERVAL 1 DAY)`, key.Key, key.Fingerprint[:]); err != nil {
		t.Fatal(err)
	}

	const retries = 8
	answers := make(chan error, retries)
	var wg sync.WaitGroup
	for range retries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, _, err := s.IncrementOnce(rctx, key, "sales", 1)
			answers <- err
		}()
	}
	time.Sleep(200 * time.Millisecond) // the retries are waiting

	for i := range 5 {
		octx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := s.Increment(octx, "other", 1)
		cancel()
		if err != nil {
			t.Fatalf("increment %d of another counter while the retries wait: %v", i, err)
		}
	}

	// The first request fails and rolls back: one retry claims the key and
	// applies the increment, the others replay its answer.
	if err := first.Rollback(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(answers)
	for err := range answers {
		if err != nil {
			t.Fatalf("retry: %v", err)
		}
	}
	if v := value(t, s, "sales"); v != 1 {
		t.Fatalf("sales = %d, want 1: the key applied its increment %d times", v, v)
	}
}
