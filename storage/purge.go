package storage

import (
	"context"
	"log/slog"
	"time"

	"countersvc/internal/deadline"
)

// purgeChunk is how many expired keys one DELETE removes: small, so that
// each statement is short and holds few locks while requests run.
const purgeChunk = 500

// PurgeExpiredKeys deletes the expired idempotency keys, chunk rows per
// statement, until none is left, and returns how many it deleted. Expired
// keys are ignored on read anyway; purging only reclaims their space.
func (s *CounterStore) PurgeExpiredKeys(ctx context.Context, chunk int) (int64, error) {
	var total int64
	for {
		res, err := execRetried(ctx, s.db, "storage.PurgeExpiredKeys", "DELETE FROM idempotency_record WHERE expires_at <= ? ORDER BY expires_at LIMIT ?", s.now(), chunk)
		if err != nil {
			return total, mapError("storage.PurgeExpiredKeys", err, true)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, mapError("storage.PurgeExpiredKeys", err, true)
		}
		total += n
		if n < int64(chunk) {
			return total, nil
		}
	}
}

// PurgeKeysEvery purges expired idempotency keys every interval until ctx
// ends. A failed round (MySQL down) is logged and the next one tries again.
func (s *CounterStore) PurgeKeysEvery(ctx context.Context, every time.Duration, log *slog.Logger) {
	deadline.Every(ctx, every, func(ctx context.Context) {
		n, err := s.PurgeExpiredKeys(ctx, purgeChunk)
		if err != nil {
			log.Warn("purging expired idempotency keys", "deleted", n, "error", err.Error())
		} else if n > 0 {
			log.Debug("purged expired idempotency keys", "deleted", n)
		}
	})
}
