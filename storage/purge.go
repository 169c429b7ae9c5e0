package storage

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/countersvc/countersvc/internal/deadline"
)

// purgeChunk is how many expired keys one DELETE removes: small, so that
// each statement is short and holds few locks while requests run.
const purgeChunk = 500

// PurgeExpiredKeys deletes the expired idempotency keys, chunk rows per
// statement, until none is left, and returns how many it deleted. Expired
// keys are ignored on read anyway; purging only reclaims their space.
func (s *CounterStore) PurgeExpiredKeys(ctx context.Context, chunk int) (int64, error) {
	return deleteInChunks(ctx, s.db, "storage.PurgeExpiredKeys",
		"DELETE FROM idempotency_record WHERE expires_at <= ? ORDER BY expires_at LIMIT ?", chunk, s.now())
}

// deleteInChunks runs query, a DELETE whose last placeholder is its LIMIT,
// with args and chunk, until a run deletes fewer than chunk rows, and
// returns how many rows it deleted in all.
func deleteInChunks(ctx context.Context, db *sql.DB, op, query string, chunk int, args ...any) (int64, error) {
	var total int64
	args = append(args, chunk)
	for {
		res, err := execRetried(ctx, db, op, query, args...)
		if err != nil {
			return total, mapError(op, err, true)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, mapError(op, err, true)
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

// EventsKept is how long delivered and failed webhook events stay listed
// in their hook's deliveries before they are purged.
const EventsKept = 30 * 24 * time.Hour

// PurgeEvery keeps, every interval until ctx ends, the webhook tables to
// what they need: it deletes the events delivered or failed more than
// EventsKept ago (the outbox keeps only what is pending and what the
// deliveries list shows), and forgets the previous secrets whose grace
// has ended (a secret is kept no longer than it signs).
func (s *HookStore) PurgeEvery(ctx context.Context, every time.Duration, log *slog.Logger) {
	deadline.Every(ctx, every, func(ctx context.Context) {
		n, err := s.PurgeEvents(ctx, EventsKept)
		if err != nil {
			log.Warn("purging old webhook events", "deleted", n, "error", err.Error())
		} else if n > 0 {
			log.Debug("purged old webhook events", "deleted", n)
		}
		if n, err := s.ForgetPreviousSecrets(ctx, s.Now()); err != nil {
			log.Warn("forgetting the webhooks' previous secrets past their grace", "error", err.Error())
		} else if n > 0 {
			log.Debug("forgot the webhooks' previous secrets past their grace", "hooks", n)
		}
	})
}

// ForgetPreviousSecrets clears the previous secrets whose grace ended by
// now, which no call signs with any more, and returns of how many hooks.
// The webhook table is small (hooks, not events): the scan is cheap.
func (s *HookStore) ForgetPreviousSecrets(ctx context.Context, now time.Time) (int64, error) {
	const op = "storage.ForgetPreviousSecrets"
	res, err := execRetried(ctx, s.db, op,
		"UPDATE webhook SET previous_secret = NULL, previous_secret_expires_at = NULL WHERE previous_secret_expires_at <= ?", now.UTC())
	if err != nil {
		return 0, mapError(op, err, true)
	}
	n, err := res.RowsAffected()
	return n, mapError(op, err, true)
}

// PurgeEvents deletes the webhook events that were delivered or failed
// more than kept ago, and returns how many.
func (s *HookStore) PurgeEvents(ctx context.Context, kept time.Duration) (int64, error) {
	// A finished event's next_attempt_at is when it finished (see Complete).
	return deleteInChunks(ctx, s.db, "storage.PurgeEvents",
		"DELETE FROM webhook_event WHERE status IN (?, ?) AND next_attempt_at <= UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND LIMIT ?",
		purgeChunk, eventDelivered, eventFailed, kept.Microseconds())
}
