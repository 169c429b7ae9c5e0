package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/webhooks"
)

// HookStore keeps threshold webhooks (the webhook table of migration 008)
// and their outbox (webhook_event): it implements webhooks.Store for the
// API and webhooks.Outbox for the relay. The events themselves are written
// by HookRecorder, inside the transactions of the changes that cross.
type HookStore struct {
	db *sql.DB
	// Now is the clock that ends a rotation's grace for PurgeEvery (the
	// relay's, by default time.Now).
	Now func() time.Time
	// changed is called after a hook was created, deleted or enabled, so
	// that the recorders learn of it (see HookRecorder).
	changed func(ctx context.Context)
}

var (
	_ webhooks.Store  = (*HookStore)(nil)
	_ webhooks.Outbox = (*HookStore)(nil)
)

// NewHookStore returns the hooks kept in db; changed (may be nil) is told
// of every change of a hook, after it committed.
func NewHookStore(db *DB, changed func(ctx context.Context)) *HookStore {
	if changed == nil {
		changed = func(context.Context) {}
	}
	return &HookStore{db: db.DB, changed: changed, Now: time.Now}
}

// The statuses of webhook_event.status.
const (
	eventPending   = 0
	eventDelivered = 1
	eventFailed    = 2
)

const hookColumns = "id, key_id, url, target, is_prefix, thresholds, every, direction, secret, created_at, disabled_at, " +
	"alert_window, alert_above, alert_n, alert_since, alert_baseline, alert_holds, alert_seq"

// CreateHook implements webhooks.Store. The count of the owner's hooks
// and the insert are one repeatable-read transaction, whose FOR UPDATE
// locks the owner's range of the index, gaps included: of two concurrent
// creations one waits (or deadlocks and is retried) and then counts the
// other's hook, so that they cannot pass the limit together.
func (s *HookStore) CreateHook(ctx context.Context, h *webhooks.Hook, limit int) error {
	const op = "storage.CreateHook"
	thresholds, _ := json.Marshal(h.Thresholds) // ints always marshal
	h.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
	err := retry(ctx, op, func() error {
		return inTx(ctx, s.db, sql.LevelRepeatableRead, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM webhook WHERE key_id = ? FOR UPDATE", h.Owner).Scan(&n); err != nil {
				return err
			}
			if n >= limit {
				return counters.Errorf(counters.EOUTOFRANGE, "This key has %d webhooks, its limit (COUNTERS_WEBHOOK_MAX_PER_KEY); delete one first.", n)
			}
			a := alertColumns(h.Alert)
			res, err := tx.ExecContext(ctx, `INSERT INTO webhook (key_id, url, target, is_prefix, thresholds, every, direction, secret, created_at,
				alert_window, alert_above, alert_n, alert_since, alert_baseline) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				append([]any{h.Owner, h.URL, h.Target, h.IsPrefix, thresholds, h.Every, string(h.Direction), h.Secret, h.CreatedAt}, a...)...)
			if err != nil {
				return err
			}
			h.ID, err = res.LastInsertId()
			return err
		})
	})
	if err != nil {
		return mapError(op, err, true)
	}
	s.changed(ctx)
	return nil
}

// Hook implements webhooks.Store.
func (s *HookStore) Hook(ctx context.Context, id int64) (*webhooks.Hook, error) {
	h, err := scanHook(s.db.QueryRowContext(ctx, "SELECT "+hookColumns+" FROM webhook WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, counters.Errorf(counters.ENOTFOUND, "Webhook %d not found.", id)
	}
	return h, mapError("storage.Hook", err, false)
}

// Hooks implements webhooks.Store.
func (s *HookStore) Hooks(ctx context.Context) ([]webhooks.Hook, error) {
	return s.hooks(ctx, "SELECT "+hookColumns+" FROM webhook ORDER BY id")
}

func (s *HookStore) hooks(ctx context.Context, query string) ([]webhooks.Hook, error) {
	const op = "storage.Hooks"
	rows, err := s.db.QueryContext(ctx, query)
	if err != nil {
		return nil, mapError(op, err, false)
	}
	defer rows.Close()
	list := []webhooks.Hook{}
	for rows.Next() {
		h, err := scanHook(rows)
		if err != nil {
			return nil, mapError(op, err, false)
		}
		list = append(list, *h)
	}
	return list, mapError(op, rows.Err(), false)
}

// DeleteHook implements webhooks.Store: the hook and its events, pending or
// not, in one transaction.
func (s *HookStore) DeleteHook(ctx context.Context, id int64) error {
	const op = "storage.DeleteHook"
	err := retry(ctx, op, func() error {
		return inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
			if err := execHook(ctx, tx, id, "DELETE FROM webhook WHERE id = ?"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "DELETE FROM webhook_event WHERE hook_id = ?", id)
			return err
		})
	})
	if err != nil {
		return mapError(op, err, true)
	}
	s.changed(ctx)
	return nil
}

// EnableHook implements webhooks.Store: the hook's pending events are due
// at once.
func (s *HookStore) EnableHook(ctx context.Context, id int64) error {
	const op = "storage.EnableHook"
	err := retry(ctx, op, func() error {
		return inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
			if err := execHook(ctx, tx, id, "UPDATE webhook SET disabled_at = NULL, failing_since = NULL WHERE id = ?"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "UPDATE webhook_event SET next_attempt_at = UTC_TIMESTAMP(6) WHERE hook_id = ? AND status = ? AND claim_token IS NULL",
				id, eventPending)
			return err
		})
	})
	if err != nil {
		return mapError(op, err, true)
	}
	s.changed(ctx)
	return nil
}

// RotateSecret implements webhooks.Store: the current secret becomes the
// previous one, whatever previous one there was is dropped, and the hook
// is read back in the same transaction, so that the answer shows the
// secret this call set even when another rotation follows at once.
// MySQL assigns a single-table UPDATE's columns left to right (and
// MariaDB's SIMULTANEOUS_ASSIGNMENT from the old row): either way
// previous_secret takes the secret being replaced.
func (s *HookStore) RotateSecret(ctx context.Context, id int64, secret string, until time.Time) (*webhooks.Hook, error) {
	const op = "storage.RotateSecret"
	var h *webhooks.Hook
	err := retry(ctx, op, func() error {
		return inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
			err := execHook(ctx, tx, id, "UPDATE webhook SET previous_secret = secret, previous_secret_expires_at = ?, secret = ? WHERE id = ?",
				until, secret)
			if err != nil {
				return err
			}
			h, err = scanHook(tx.QueryRowContext(ctx, "SELECT "+hookColumns+" FROM webhook WHERE id = ?", id))
			return err
		})
	})
	if err != nil {
		return nil, mapError(op, err, true)
	}
	h.PreviousUntil = &until
	return h, nil
}

// execHook runs a statement on the hook id, its last argument, and says
// ENOTFOUND when no row matched (the DSN's clientFoundRows counts a row an
// UPDATE leaves as it was, so 0 is a missing hook).
func execHook(ctx context.Context, tx *sql.Tx, id int64, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, append(args, id)...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err == nil && n == 0 {
		return counters.Errorf(counters.ENOTFOUND, "Webhook %d not found.", id)
	}
	return err
}

// Deliveries implements webhooks.Store.
func (s *HookStore) Deliveries(ctx context.Context, hookID int64, limit int) ([]webhooks.Delivery, error) {
	const op = "storage.Deliveries"
	if _, err := s.Hook(ctx, hookID); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT msg_id, status, attempts, last_status_code, next_attempt_at, body, created_at
		FROM webhook_event WHERE hook_id = ? ORDER BY id DESC LIMIT ?`, hookID, limit)
	if err != nil {
		return nil, mapError(op, err, false)
	}
	defer rows.Close()
	list := []webhooks.Delivery{}
	for rows.Next() {
		var d webhooks.Delivery
		var status int
		var code sql.NullInt64
		var next time.Time
		if err := rows.Scan(&d.ID, &status, &d.Attempts, &code, &next, &d.Event, &d.CreatedAt); err != nil {
			return nil, mapError(op, err, false)
		}
		d.Status = [...]webhooks.Status{webhooks.Pending, webhooks.Delivered, webhooks.Failed}[status]
		if code.Valid {
			c := int(code.Int64)
			d.LastStatusCode = &c
		}
		if status == eventPending {
			d.NextAttemptAt = &next
		}
		list = append(list, d)
	}
	return list, mapError(op, rows.Err(), false)
}

// Claim implements webhooks.Outbox: a short transaction takes due events
// with SELECT ... FOR UPDATE SKIP LOCKED (MariaDB 10.6+, MySQL 8), so that
// processes claiming at once take different rows, and leases them under a
// fresh token by moving their next_attempt_at past the lease. On Galera
// the row locks are the node's own, and two nodes claiming one event meet
// at commit, where one gets a deadlock (1213): retry claims again, and the
// row is then leased and not due. Events of a disabled hook are put off
// until it is enabled again (EnableHook makes them due). The first claim
// of an event opens its retry window (webhooks.RetryWindow), which ends
// its delivery however many of its attempts a Retry-After paced.
func (s *HookStore) Claim(ctx context.Context, limit int, lease time.Duration) ([]webhooks.Attempt, error) {
	const op = "storage.ClaimEvents"
	var claimed []webhooks.Attempt
	err := retry(ctx, op, func() error {
		claimed = claimed[:0]
		return inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, `SELECT id FROM webhook_event
				WHERE status = ? AND next_attempt_at <= UTC_TIMESTAMP(6)
				ORDER BY next_attempt_at LIMIT ? FOR UPDATE SKIP LOCKED`, eventPending, limit)
			if err != nil {
				return err
			}
			var ids []any
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, id)
			}
			rows.Close()
			if err := rows.Err(); err != nil || len(ids) == 0 {
				return err
			}
			token := make([]byte, 16)
			rand.Read(token)
			in := placeholders("?", ", ", len(ids))
			if _, err := tx.ExecContext(ctx, `UPDATE webhook_event SET claim_token = ?, attempts = attempts + 1,
				next_attempt_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND,
				retry_until = COALESCE(retry_until, UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND) WHERE id IN (`+in+")",
				append([]any{token, lease.Microseconds(), webhooks.RetryWindow.Microseconds()}, ids...)...); err != nil {
				return err
			}
			rows, err = tx.QueryContext(ctx, `SELECT e.id, e.msg_id, e.body, e.attempts, e.backoffs, e.retry_until, e.hook_id, h.url, h.secret,
				h.previous_secret, h.previous_secret_expires_at, h.disabled_at IS NOT NULL
				FROM webhook_event e LEFT JOIN webhook h ON h.id = e.hook_id WHERE e.id IN (`+in+")", ids...)
			if err != nil {
				return err
			}
			defer rows.Close()
			var held, orphans []any
			for rows.Next() {
				a := webhooks.Attempt{Token: token}
				var url, secret, previous sql.NullString
				var until sql.NullTime
				var disabled sql.NullBool
				if err := rows.Scan(&a.EventID, &a.MsgID, &a.Body, &a.Attempts, &a.Backoffs, &a.RetryUntil, &a.HookID, &url, &secret, &previous, &until, &disabled); err != nil {
					return err
				}
				switch {
				case !url.Valid: // deleted while its event was being written
					orphans = append(orphans, a.EventID)
				case disabled.Bool:
					held = append(held, a.EventID)
				default:
					a.URL = url.String
					a.Secrets = webhooks.Secrets{Current: secret.String, Previous: previous.String, PreviousUntil: until.Time}
					claimed = append(claimed, a)
				}
			}
			if err := rows.Err(); err != nil {
				return err
			}
			rows.Close()
			if len(held) > 0 {
				// Not an attempt: back to where they were, due in a day;
				// an event never attempted gets its window when it is. (Its
				// retry_until is assigned first: MySQL assigns left to
				// right and MariaDB may assign from the old row, and both
				// then read attempts as the claim left it.)
				if _, err := tx.ExecContext(ctx, `UPDATE webhook_event SET claim_token = NULL,
					retry_until = IF(attempts = 1, NULL, retry_until), attempts = attempts - 1,
					next_attempt_at = UTC_TIMESTAMP(6) + INTERVAL 1 DAY WHERE id IN (`+placeholders("?", ", ", len(held))+")", held...); err != nil {
					return err
				}
			}
			if len(orphans) > 0 {
				if _, err := tx.ExecContext(ctx, "DELETE FROM webhook_event WHERE id IN ("+placeholders("?", ", ", len(orphans))+")", orphans...); err != nil {
					return err
				}
			}
			return nil
		})
	})
	if err != nil {
		return nil, mapError(op, err, true)
	}
	return claimed, nil
}

// Complete implements webhooks.Outbox: only while the event is still
// leased under a's token, so that a process whose lease ran out (and whose
// event another process has claimed since) records nothing. The hook's
// run of failures starts, ends or disables it in the same transaction.
// backoffs only grows: an outcome that took no pause of the schedule (a
// success, a Retry-After) leaves it.
func (s *HookStore) Complete(ctx context.Context, a webhooks.Attempt, o webhooks.Outcome, disableAfter time.Duration) error {
	const op = "storage.CompleteEvent"
	status := map[webhooks.Status]int{webhooks.Pending: eventPending, webhooks.Delivered: eventDelivered, webhooks.Failed: eventFailed}[o.Status]
	var code any
	if o.StatusCode != 0 {
		code = o.StatusCode
	}
	changed := false
	err := retry(ctx, op, func() error {
		return inTx(ctx, s.db, sql.LevelReadCommitted, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `UPDATE webhook_event SET status = ?, last_status_code = ?, claim_token = NULL,
				backoffs = GREATEST(backoffs, ?), next_attempt_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
				WHERE id = ? AND claim_token = ?`,
				status, code, o.Backoffs, o.Next.Microseconds(), a.EventID, a.Token)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return err // the lease was lost: another process owns the event now
			}
			switch {
			case o.Succeeded:
				_, err = tx.ExecContext(ctx, "UPDATE webhook SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL", a.HookID)
			case o.Gone:
				res, err = tx.ExecContext(ctx, "UPDATE webhook SET disabled_at = UTC_TIMESTAMP(6) WHERE id = ? AND disabled_at IS NULL", a.HookID)
				changed = err == nil
			default:
				res, err = tx.ExecContext(ctx, `UPDATE webhook SET failing_since = COALESCE(failing_since, UTC_TIMESTAMP(6)),
					disabled_at = IF(failing_since < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND, UTC_TIMESTAMP(6), disabled_at)
					WHERE id = ? AND disabled_at IS NULL`, disableAfter.Microseconds(), a.HookID)
				changed = err == nil
			}
			return err
		})
	})
	if err != nil {
		return mapError(op, err, true)
	}
	if changed {
		s.changed(ctx) // a disabled hook records no more events
	}
	return nil
}

// Backlog implements webhooks.Outbox.
func (s *HookStore) Backlog(ctx context.Context) (int64, time.Duration, error) {
	var n int64
	var oldest sql.NullFloat64
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), TIMESTAMPDIFF(MICROSECOND, MIN(created_at), UTC_TIMESTAMP(6)) / 1e6
		FROM webhook_event WHERE status = ?`, eventPending).Scan(&n, &oldest)
	if err != nil {
		return 0, 0, mapError("storage.Backlog", err, false)
	}
	return n, time.Duration(oldest.Float64 * float64(time.Second)), nil
}

// scanHook reads one row of hookColumns.
func scanHook(row scanner) (*webhooks.Hook, error) {
	var h webhooks.Hook
	var thresholds []byte
	var direction string
	var disabled, since sql.NullTime
	var window sql.NullInt64
	var a webhooks.Alert
	if err := row.Scan(&h.ID, &h.Owner, &h.URL, &h.Target, &h.IsPrefix, &thresholds, &h.Every, &direction, &h.Secret, &h.CreatedAt, &disabled,
		&window, &a.Above, &a.N, &since, &a.Baseline, &a.Holds, &a.Seq); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(thresholds, &h.Thresholds); err != nil {
		return nil, err
	}
	h.Direction, h.DisabledAt = webhooks.Direction(direction), nullTime(disabled)
	if window.Valid {
		a.Window, a.Since = time.Duration(window.Int64)*time.Second, since.Time
		h.Alert = &a
	}
	return &h, nil
}
