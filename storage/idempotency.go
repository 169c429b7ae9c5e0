package storage

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// once runs change under key, in one transaction that first claims the key
// (see claimKey) and last records change's result with it, so that the
// change and its result are committed together or not at all. A key that is
// already recorded returns the recorded result with replayed set and changes
// nothing. The result is kept as JSON, so T must survive a round trip.
// change returns the counters' changes, which go through the change seam
// as any write's (see changes.go); a replay changes nothing and reports
// nothing.
//
// A refusal of the change itself (out of range, a create-only set of a
// counter that exists: see refusal) is the request's answer too, and is
// recorded as such: the change's transaction is rolled back and a second
// one claims the key and records the refusal, so that a retry is answered
// the same refusal, as openapi.yaml has it ("returns the first answer, status
// and body alike"), and does not apply the change once the bound moved.
// Other failures (the database, a collision) record nothing: the key stays
// free and a retry runs anew.
func once[T any](ctx context.Context, s *CounterStore, op string, key counters.Idempotency, change func(tx *sql.Tx) (T, []counters.Change, error)) (result T, replayed bool, err error) {
	leave, err := s.keys.enter(ctx, gateKey(key))
	if err != nil {
		return result, false, counters.Wrap(counters.EUNAVAILABLE, op, err,
			"An earlier request with this Idempotency-Key is still running; nothing was changed.")
	}
	defer leave()
	var changes []counters.Change
	// attempt is one transaction: it claims key, or replays its record,
	// else records what answer answers.
	attempt := func(answer func(tx *sql.Tx) (any, error)) error {
		return retryTx(ctx, s.db, op, func(tx *sql.Tx) error {
			var zero T
			result, replayed, changes = zero, false, nil
			prior, err := claimKey(ctx, tx, key, s.now(), s.KeyRetention)
			if err != nil {
				return err
			}
			if prior != nil {
				replayed = true
				return decodeRecord(prior, &result)
			}
			a, err := answer(tx)
			if err != nil {
				return err
			}
			record, err := json.Marshal(a)
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, "UPDATE idempotency_record SET result = ? WHERE key_id = ? AND idem_key = ?", record, key.Owner, key.Key)
			return err
		})
	}
	var refused *counters.Error
	err = attempt(func(tx *sql.Tx) (any, error) {
		var err error
		if result, changes, err = change(tx); err != nil {
			if refused = refusal(op, err); refused != nil {
				return nil, errRefused
			}
			return nil, err
		}
		return result, s.seam.record(ctx, tx, changes)
	})
	if errors.Is(err, errRefused) {
		err = attempt(func(*sql.Tx) (any, error) {
			var r refusalRecord
			r.Refused.Code, r.Refused.Message = refused.Code, refused.Message
			return r, nil
		})
		if err == nil && !replayed {
			err = refused
		}
	}
	if err != nil {
		var zero T
		return zero, false, mapError(op, err, true)
	}
	s.seam.committed(ctx, changes)
	return result, replayed, nil
}

// errRefused rolls back a change that was refused, so that a transaction
// of its own records the refusal alone.
var errRefused = errors.New("storage: the change was refused")

// refusal is err as a refusal of the change that a retry must be answered
// again, or nil: a bound or the 64-bit range (out_of_range), or a
// create-only set of a counter that exists (conflict). These depend on
// the counter as the change found it, not on the database's health.
func refusal(op string, err error) *counters.Error {
	var e *counters.Error
	if !errors.As(mapError(op, err, true), &e) || (e.Code != counters.EOUTOFRANGE && e.Code != counters.ECONFLICT) {
		return nil
	}
	return counters.Errorf(e.Code, "%s", e.Message)
}

// refusalRecord is a recorded refusal; a recorded success is the result's
// own JSON, which is never an object with this key.
type refusalRecord struct {
	Refused struct{ Code, Message string } `json:"$refused"`
}

// decodeRecord reads a recorded answer into result, or returns the recorded
// refusal, marked counters.ErrReplayed.
func decodeRecord(record []byte, result any) error {
	if bytes.HasPrefix(record, []byte(`{"$refused"`)) {
		var r refusalRecord
		if err := json.Unmarshal(record, &r); err != nil {
			return err
		}
		return &counters.Error{Code: r.Refused.Code, Message: r.Refused.Message, Err: counters.ErrReplayed}
	}
	return json.Unmarshal(record, result)
}

// gateKey names key in the keyGate: its owner and the client's key.
func gateKey(key counters.Idempotency) string {
	return strconv.FormatInt(key.Owner, 10) + " " + key.Key
}

// claimKey inserts the key's row before the change. InnoDB makes a
// concurrent transaction inserting the same key wait until this one ends;
// it then meets the committed row (and returns its result) or, when this
// one rolled back, claims the key itself. A recorded key comes back as its
// result, or ECONFLICT when it was recorded for another request. An expired
// row counts as absent: it is deleted and the key claimed anew. A row that
// vanishes between the insert and the read (purged) returns errAgain: the
// transaction, which has changed nothing yet, runs again.
func claimKey(ctx context.Context, tx *sql.Tx, key counters.Idempotency, now time.Time, retention time.Duration) ([]byte, error) {
	insert := func() error {
		_, err := tx.ExecContext(ctx, `INSERT INTO idempotency_record (key_id, idem_key, fingerprint, result, created_at, expires_at)
			VALUES (?, ?, ?, '', ?, ?)`, key.Owner, key.Key, key.Fingerprint[:], now, now.Add(retention))
		return err
	}
	err := insert()
	if !isDuplicate(err) {
		return nil, err // claimed, or failed
	}
	var fingerprint, result []byte
	var expires time.Time
	err = tx.QueryRowContext(ctx, "SELECT fingerprint, result, expires_at FROM idempotency_record WHERE key_id = ? AND idem_key = ?", key.Owner, key.Key).
		Scan(&fingerprint, &result, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, errAgain
	case err != nil:
		return nil, err
	case !expires.After(now):
		if _, err := tx.ExecContext(ctx, "DELETE FROM idempotency_record WHERE key_id = ? AND idem_key = ? AND expires_at <= ?", key.Owner, key.Key, now); err != nil {
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
	return result, nil
}

// IncrementOnce implements counters.Store.
func (s *CounterStore) IncrementOnce(ctx context.Context, key counters.Idempotency, name string, by int64) (int64, bool, error) {
	return once(ctx, s, "storage.IncrementOnce", key, func(tx *sql.Tx) (int64, []counters.Change, error) {
		now := s.now()
		v, err := s.increment(ctx, tx, name, by, now)
		return v, []counters.Change{incrementChange(counters.Increment{Name: name, By: by}, v, now)}, err
	})
}

// setResult is what SetOnce records.
type setResult struct {
	Counter counters.Counter
	Created bool
}

// SetOnce implements counters.Store.
func (s *CounterStore) SetOnce(ctx context.Context, key counters.Idempotency, req counters.SetRequest) (*counters.Counter, bool, bool, error) {
	r, replayed, err := once(ctx, s, "storage.SetOnce", key, func(tx *sql.Tx) (setResult, []counters.Change, error) {
		c, created, ch, err := setTx(ctx, tx, req, s.now())
		if err != nil {
			return setResult{}, nil, err
		}
		return setResult{Counter: *c, Created: created}, []counters.Change{ch}, nil
	})
	if err != nil {
		return nil, false, false, err
	}
	return &r.Counter, r.Created, replayed, nil
}

// BatchOnce implements counters.Store.
func (s *CounterStore) BatchOnce(ctx context.Context, key counters.Idempotency, items []counters.Increment) ([]int64, bool, error) {
	return once(ctx, s, "storage.BatchOnce", key, func(tx *sql.Tx) ([]int64, []counters.Change, error) {
		return batchTx(ctx, tx, items, s.now())
	})
}
