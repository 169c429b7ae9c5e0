package storage

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"time"

	"countersvc/counters"
)

// once runs change under key, in one transaction that first claims the key
// (see claimKey) and last records change's answer with it, so that the
// change and its answer are committed together or not at all. A key that is
// already recorded returns the recorded answer and changes nothing. A failed
// change rolls the claim back too: failures are not recorded.
func (s *CounterStore) once(ctx context.Context, op string, key counters.Idempotency, change func(tx *sql.Tx) (counters.Answer, error)) (counters.Answer, error) {
	leave, err := s.keys.enter(ctx, key.Key)
	if err != nil {
		return counters.Answer{}, counters.Wrap(counters.EUNAVAILABLE, op, err,
			"An earlier request with this Idempotency-Key is still running; nothing was changed.")
	}
	defer leave()
	var ans counters.Answer
	err = s.retryTx(ctx, op, func(tx *sql.Tx) error {
		prior, err := s.claimKey(ctx, tx, key)
		if err != nil || prior != nil {
			ans = deref(prior)
			return err
		}
		if ans, err = change(tx); err != nil {
			return err
		}
		body := ans.Body
		if body == nil {
			body = []byte{}
		}
		_, err = tx.ExecContext(ctx, "UPDATE idempotency_key SET status = ?, body = ? WHERE idem_key = ?", ans.Status, body, key.Key)
		return err
	})
	if err != nil {
		return counters.Answer{}, mapError(op, err, true)
	}
	return ans, nil
}

// claimKey inserts the key's row before the change. InnoDB makes a
// concurrent transaction inserting the same key wait until this one ends;
// it then meets the committed row (and returns its answer) or, when this
// one rolled back, claims the key itself. A recorded key comes back as its
// answer, or ECONFLICT when it was recorded for another request. An expired
// row counts as absent: it is deleted and the key claimed anew. A row that
// vanishes between the insert and the read (purged) returns errAgain: the
// transaction, which has changed nothing yet, runs again.
func (s *CounterStore) claimKey(ctx context.Context, tx *sql.Tx, key counters.Idempotency) (*counters.Answer, error) {
	now := s.now()
	insert := func() error {
		_, err := tx.ExecContext(ctx, `INSERT INTO idempotency_key (idem_key, fingerprint, status, body, created_at, expires_at)
			VALUES (?, ?, 0, '', ?, ?)`, key.Key, key.Fingerprint[:], now, now.Add(s.KeyRetention))
		return err
	}
	err := insert()
	if !isDuplicate(err) {
		return nil, err // claimed, or failed
	}
	var fingerprint []byte
	var expires time.Time
	a := counters.Answer{Replayed: true}
	err = tx.QueryRowContext(ctx, "SELECT fingerprint, status, body, expires_at FROM idempotency_key WHERE idem_key = ?", key.Key).
		Scan(&fingerprint, &a.Status, &a.Body, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, errAgain
	case err != nil:
		return nil, err
	case !expires.After(now):
		if _, err := tx.ExecContext(ctx, "DELETE FROM idempotency_key WHERE idem_key = ? AND expires_at <= ?", key.Key, now); err != nil {
			return nil, err
		}
		// This transaction holds the deleted row's lock: a concurrent
		// claim of the key waits for it, so this insert meets no row.
		if err := insert(); isDuplicate(err) {
			return nil, errAgain // be safe all the same
		} else if err != nil {
			return nil, err
		}
		return nil, nil
	case !bytes.Equal(fingerprint, key.Fingerprint[:]):
		return nil, counters.Errorf(counters.ECONFLICT, "This Idempotency-Key was already used with a different request; use a new key for a new request.")
	}
	return &a, nil
}

// IncrementOnce implements counters.Store.
func (s *CounterStore) IncrementOnce(ctx context.Context, key counters.Idempotency, name string, by int64, render counters.RenderValue) (counters.Answer, error) {
	return s.once(ctx, "storage.IncrementOnce", key, func(tx *sql.Tx) (counters.Answer, error) {
		v, err := s.increment(ctx, tx, name, by)
		if err != nil {
			return counters.Answer{}, err
		}
		return render(v)
	})
}

// SetOnce implements counters.Store.
func (s *CounterStore) SetOnce(ctx context.Context, key counters.Idempotency, req counters.SetRequest, render counters.RenderSet) (counters.Answer, error) {
	return s.once(ctx, "storage.SetOnce", key, func(tx *sql.Tx) (counters.Answer, error) {
		c, created, err := s.setTx(ctx, tx, req)
		if err != nil {
			return counters.Answer{}, err
		}
		return render(c, created)
	})
}

// BatchOnce implements counters.Store.
func (s *CounterStore) BatchOnce(ctx context.Context, key counters.Idempotency, items []counters.Increment, render counters.RenderBatch) (counters.Answer, error) {
	return s.once(ctx, "storage.BatchOnce", key, func(tx *sql.Tx) (counters.Answer, error) {
		values, err := s.batchTx(ctx, tx, items)
		if err != nil {
			return counters.Answer{}, err
		}
		return render(values)
	})
}

func deref(a *counters.Answer) counters.Answer {
	if a == nil {
		return counters.Answer{}
	}
	return *a
}
