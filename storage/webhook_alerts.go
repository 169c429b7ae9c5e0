package storage

import (
	"context"
	"database/sql"
	"time"

	"github.com/countersvc/countersvc/webhooks"
)

// The alerts' state lives in the webhook table beside each alert's
// settings (migration 015), and each of its transitions is written in one
// transaction with the event it sends, into the outbox the relay reads:
// the relay signs, retries, checks the address and records the deliveries
// of an alert's calls as it does a threshold's. Nothing here runs with an
// increment: the evaluator (webhooks.Evaluator) reads history on its own
// clock, every process twice a minute.

var _ webhooks.AlertStore = (*HookStore)(nil)

// alertColumns are the values of an alert's columns of webhook, in
// CreateHook's order: all NULL or default for a threshold hook.
func alertColumns(a *webhooks.Alert) []any {
	if a == nil {
		return []any{nil, false, 0, nil, 0}
	}
	return []any{int64(a.Window / time.Second), a.Above, a.N, a.Since, a.Baseline}
}

// AlertHooks implements webhooks.AlertStore.
func (s *HookStore) AlertHooks(ctx context.Context) ([]webhooks.Hook, error) {
	return s.hooks(ctx, "SELECT "+hookColumns+" FROM webhook WHERE alert_window IS NOT NULL AND disabled_at IS NULL ORDER BY id")
}

// MoveAlert implements webhooks.AlertStore: a compare-and-set of the
// state on the sequence number h was read with, and the event in the same
// transaction. Of two processes that found the same transition, the
// second's UPDATE waits for the first's row lock, then matches no row
// (the sequence moved) and records nothing; a process that read the state
// before another's transition was committed finds the same. A commit
// whose answer was lost is found committed by the next pass, which then
// reads the new sequence. A move found at a moment no later than the last
// one recorded (by a process whose clock is behind) is refused too. The
// DSN's clientFoundRows makes the rows affected the rows matched.
func (s *HookStore) MoveAlert(ctx context.Context, h *webhooks.Hook, holds bool, at time.Time, body []byte) (bool, error) {
	const op = "storage.MoveAlert"
	moved := false
	err := retry(ctx, op, func() error {
		moved = false
		return inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
			at := at.UTC().Truncate(time.Microsecond)
			res, err := tx.ExecContext(ctx, `UPDATE webhook SET alert_holds = ?, alert_seq = alert_seq + 1, alert_at = ?
				WHERE id = ? AND alert_seq = ? AND (alert_at IS NULL OR alert_at < ?) AND alert_window IS NOT NULL AND disabled_at IS NULL`,
				holds, at, h.ID, h.Alert.Seq, at)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return err
			}
			// Due at the database's clock, which the relays' claims read;
			// created at the check's, as its body says.
			_, err = tx.ExecContext(ctx, `INSERT INTO webhook_event (hook_id, msg_id, body, status, attempts, next_attempt_at, created_at)
				VALUES (?, ?, ?, ?, 0, UTC_TIMESTAMP(6), ?)`, h.ID, newMsgID(), body, eventPending, at)
			moved = err == nil
			return err
		})
	})
	if err != nil {
		return false, mapError(op, err, true)
	}
	return moved, nil
}
