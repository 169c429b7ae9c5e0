package storage

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/keys"
)

// KeyStore implements keys.Store on MySQL: the api_key table of migration
// 005. A key's lists are kept as JSON; the secret only as its hash.
type KeyStore struct {
	db *sql.DB
}

var _ keys.Store = (*KeyStore)(nil)

// NewKeyStore returns a store on db, whose tables Open has migrated.
func NewKeyStore(db *DB) *KeyStore { return &KeyStore{db: db.DB} }

const keyColumns = "id, name, scopes, prefixes, companies, created_at, expires_at, revoked_at, last_used_at"

// Create implements keys.Store.
func (s *KeyStore) Create(ctx context.Context, k *keys.Key, hash [32]byte) error {
	const op = "storage.CreateKey"
	scopes, _ := json.Marshal(k.Scopes) // lists of strings and ints always marshal
	prefixes, _ := json.Marshal(k.Prefixes)
	companies, _ := json.Marshal(k.Companies)
	res, err := s.db.ExecContext(ctx, `INSERT INTO api_key (name, secret_hash, scopes, prefixes, companies, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, k.Name, hash[:], scopes, prefixes, companies, k.CreatedAt, k.ExpiresAt)
	if err != nil {
		return mapError(op, err, true)
	}
	k.ID, err = res.LastInsertId()
	return mapError(op, err, true)
}

// ByHash implements keys.Store.
func (s *KeyStore) ByHash(ctx context.Context, hash [32]byte) (*keys.Key, error) {
	k, err := scanKey(s.db.QueryRowContext(ctx, "SELECT "+keyColumns+" FROM api_key WHERE secret_hash = ?", hash[:]))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, counters.Errorf(counters.ENOTFOUND, "No such API key.")
	}
	return k, mapError("storage.KeyByHash", err, false)
}

// Get implements keys.Store.
func (s *KeyStore) Get(ctx context.Context, id int64) (*keys.Key, error) {
	k, err := scanKey(s.db.QueryRowContext(ctx, "SELECT "+keyColumns+" FROM api_key WHERE id = ? AND revoked_at IS NULL", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, counters.Errorf(counters.ENOTFOUND, "API key %d not found.", id)
	}
	return k, mapError("storage.GetKey", err, false)
}

// List implements keys.Store.
func (s *KeyStore) List(ctx context.Context) ([]keys.Key, error) {
	const op = "storage.ListKeys"
	rows, err := s.db.QueryContext(ctx, "SELECT "+keyColumns+" FROM api_key WHERE revoked_at IS NULL ORDER BY id")
	if err != nil {
		return nil, mapError(op, err, false)
	}
	defer rows.Close()
	list := []keys.Key{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, mapError(op, err, false)
		}
		list = append(list, *k)
	}
	return list, mapError(op, rows.Err(), false)
}

// Revoke implements keys.Store.
func (s *KeyStore) Revoke(ctx context.Context, id int64, at time.Time) error {
	const op = "storage.RevokeKey"
	res, err := s.db.ExecContext(ctx, "UPDATE api_key SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", at, id)
	if err != nil {
		return mapError(op, err, true)
	}
	if n, err := res.RowsAffected(); err != nil {
		return mapError(op, err, true)
	} else if n == 0 {
		return counters.Errorf(counters.ENOTFOUND, "API key %d not found.", id)
	}
	return nil
}

// Touch implements keys.Store: one statement for all the keys. A later
// time never goes back, whichever process writes last.
func (s *KeyStore) Touch(ctx context.Context, ids []int64, at time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	args := make([]any, 0, len(ids)+2)
	args = append(args, at, at)
	for _, id := range ids {
		args = append(args, id)
	}
	_, err := s.db.ExecContext(ctx, "UPDATE api_key SET last_used_at = ? WHERE (last_used_at IS NULL OR last_used_at < ?) AND id IN ("+
		placeholders("?", ", ", len(ids))+")", args...)
	return mapError("storage.TouchKeys", err, true)
}

// scanKey reads one row of keyColumns.
func scanKey(row interface{ Scan(...any) error }) (*keys.Key, error) {
	var k keys.Key
	var scopes, prefixes, companies []byte
	var expires, revoked, used sql.NullTime
	if err := row.Scan(&k.ID, &k.Name, &scopes, &prefixes, &companies, &k.CreatedAt, &expires, &revoked, &used); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		raw []byte
		dst any
	}{{scopes, &k.Scopes}, {prefixes, &k.Prefixes}, {companies, &k.Companies}} {
		if err := json.Unmarshal(f.raw, f.dst); err != nil {
			return nil, err
		}
	}
	k.ExpiresAt, k.RevokedAt, k.LastUsedAt = nullTime(expires), nullTime(revoked), nullTime(used)
	return &k, nil
}

func nullTime(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	return &t.Time
}
