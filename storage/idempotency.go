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
	err = s.withRetry(ctx, func(tx *sql.Tx) error {
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
// row counts as absent: it is deleted and the key claimed anew.
func (s *CounterStore) claimKey(ctx context.Context, tx *sql.Tx, key counters.Idempotency) (*counters.Answer, error) {
	now := s.now()
	for range 3 {
		_, err := tx.ExecContext(ctx, `INSERT INTO idempotency_key (idem_key, fingerprint, status, body, created_at, expires_at)
			VALUES (?, ?, 0, '', ?, ?)`, key.Key, key.Fingerprint[:], now, now.Add(s.KeyRetention))
		if !isDuplicate(err) {
			return nil, err
		}
		var fingerprint []byte
		var expires time.Time
		a := counters.Answer{Replayed: true}
		err = tx.QueryRowContext(ctx, "SELECT fingerprint, status, body, expires_at FROM idempotency_key WHERE idem_key = ?", key.Key).
			Scan(&fingerprint, &a.Status, &a.Body, &expires)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue // purged in between: claim it
		case err != nil:
			return nil, err
		case !expires.After(now):
			if _, err := tx.ExecContext(ctx, "DELETE FROM idempotency_key WHERE idem_key = ? AND expires_at <= ?", key.Key, now); err != nil {
				return nil, err
			}
			continue
		case !bytes.Equal(fingerprint, key.Fingerprint[:]):
			return nil, counters.Errorf(counters.ECONFLICT, "This Idempotency-Key was already used with a different request; use a new key for a new request.")
		}
		return &a, nil
	}
	return nil, errAgain
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
		switch {
		case isDuplicate(err) && req.CreateOnly:
			return counters.Answer{}, counters.Errorf(counters.ECONFLICT, "Counter already exists.")
		case isDuplicate(err):
			return counters.Answer{}, errAgain // created concurrently: now it exists
		case err != nil:
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
