package storage

import (
	"context"
	"database/sql"
	"time"
)

// erParseError is a statement the server does not understand.
const erParseError = 1064

// probeName is the counter the probe upserts and never commits: a reserved
// name, so that no client's counter is even locked by it.
const probeName = "_storage/returning-probe"

// probeReturning upserts a row with RETURNING in a transaction that it rolls
// back, and reports whether the row came back. Knowing the clause is not
// enough (MariaDB 10.5+ does, MySQL refuses it): a server may accept it and
// return nothing, so the probe must write a row, as the real statements do,
// rather than insert nothing and only see the clause parse.
func probeReturning(ctx context.Context, db *sql.DB) (bool, error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	now := time.Now().UTC()
	rows, err := tx.QueryContext(ctx, "INSERT INTO counter (name, value, created_at, updated_at) VALUES (?, 0, ?, ?) "+
		"ON DUPLICATE KEY UPDATE value = value RETURNING name", probeName, now, now)
	if mysqlErrNumber(err) == erParseError {
		return false, nil
	} else if err != nil {
		return false, err
	}
	defer rows.Close()
	returned := rows.Next()
	return returned, rows.Err()
}
