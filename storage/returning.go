package storage

import (
	"context"
	"database/sql"
)

// supportsReturning asks the server whether it knows INSERT ... RETURNING
// (MariaDB 10.5+, not MySQL) with a statement that inserts nothing.
func supportsReturning(ctx context.Context, db *sql.DB) (bool, error) {
	rows, err := db.QueryContext(ctx, "INSERT INTO counter (name, value, created_at, updated_at) "+
		"SELECT '', 0, '2000-01-01', '2000-01-01' FROM DUAL WHERE FALSE RETURNING name")
	if mysqlErrNumber(err) == erParseError {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, rows.Close()
}

// erParseError is a statement the server does not understand.
const erParseError = 1064
