package storage

import (
	"context"
	"database/sql"
	"runtime"
	"sync"
	"time"
	"weak"
)

// erParseError is a statement the server does not understand.
const erParseError = 1064

// probeTimeout bounds the probe when its caller (the boot) has no deadline.
const probeTimeout = 10 * time.Second

// probeName is the counter the probe upserts and never commits: a reserved
// name, so that no client's counter is even locked by it.
const probeName = "_storage/returning-probe"

// returningOf remembers the probe's answer per pool, so that every store on
// one *sql.DB shares one probe. Its keys are weak, and a collected pool's
// entry is removed, so that closed pools (tests open many) are not kept.
var returningOf = struct {
	sync.Mutex
	byDB map[weak.Pointer[sql.DB]]bool
}{byDB: map[weak.Pointer[sql.DB]]bool{}}

// supportsReturning says whether INSERT ... RETURNING hands back rows on
// db's server, asking it only the first time. A failed probe is not
// remembered: the next caller asks again.
func supportsReturning(ctx context.Context, db *sql.DB) (bool, error) {
	key := weak.Make(db)
	returningOf.Lock()
	defer returningOf.Unlock()
	if ok, known := returningOf.byDB[key]; known {
		return ok, nil
	}
	ok, err := probeReturning(ctx, db)
	if err != nil {
		return false, err
	}
	returningOf.byDB[key] = ok
	runtime.AddCleanup(db, func(key weak.Pointer[sql.DB]) {
		returningOf.Lock()
		delete(returningOf.byDB, key)
		returningOf.Unlock()
	}, key)
	return ok, nil
}

// probeReturning upserts a row with RETURNING in a transaction that it rolls
// back, and reports whether the row came back. Knowing the clause is not
// enough (MariaDB 10.5+ does, MySQL refuses it): a server may accept it and
// return nothing, so the probe must write a row, as the real statements do,
// rather than insert nothing and only see the clause parse.
func probeReturning(ctx context.Context, db *sql.DB) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
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
