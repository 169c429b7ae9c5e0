package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"countersvc/storage"
)

// runRaw times the seed's technique: per ticket, one UPDATE that takes the
// number with LAST_INSERT_ID(expr) and one INSERT, both autocommit, each
// one round trip (the session settings are the service's, with
// interpolated parameters).
func runRaw(ctx context.Context, c config) (time.Duration, error) {
	db, err := openRaw(ctx, c.dsn, c.boards*c.workers)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	boards := make([]int64, c.boards)
	for i := range boards {
		res, err := db.ExecContext(ctx, "INSERT INTO board (company_id, slug, title, created_at) VALUES (1, ?, 'ticketbench', ?)",
			fmt.Sprintf("BENCH%d", i), time.Now().UTC())
		if err != nil {
			return 0, err
		}
		if boards[i], err = res.LastInsertId(); err != nil {
			return 0, err
		}
	}
	elapsed, err := runWorkers(c, boards, func(board int64, title string) error {
		return rawTicket(ctx, db, board, title, c.description)
	})
	if err != nil {
		return 0, err
	}
	return elapsed, verifyRaw(ctx, db, c)
}

func rawTicket(ctx context.Context, db *sql.DB, board int64, title, description string) error {
	res, err := db.ExecContext(ctx, "UPDATE board SET max_ticket_id = LAST_INSERT_ID(max_ticket_id + 1) WHERE id = ?", board)
	if err != nil {
		return err
	}
	local, err := res.LastInsertId()
	if err != nil {
		return err
	}
	_, err = db.ExecContext(ctx, "INSERT INTO ticket (board_id, local_id, title, description, created_at) VALUES (?, ?, ?, ?, ?)",
		board, local, title, description, time.Now().UTC())
	return err
}

func verifyRaw(ctx context.Context, db *sql.DB, c config) error {
	rows, err := db.QueryContext(ctx, "SELECT board_id, MIN(local_id), MAX(local_id), COUNT(DISTINCT local_id) FROM ticket GROUP BY board_id")
	if err != nil {
		return err
	}
	defer rows.Close()
	want := int64(c.workers * c.per)
	n := 0
	for rows.Next() {
		var board, lo, hi, distinct int64
		if err := rows.Scan(&board, &lo, &hi, &distinct); err != nil {
			return err
		}
		if lo != 1 || hi != want || distinct != want {
			return fmt.Errorf("raw board %d: numbers %d..%d, %d distinct; want 1..%d", board, lo, hi, distinct, want)
		}
		n++
	}
	if n != c.boards {
		return fmt.Errorf("raw: tickets on %d boards, want %d", n, c.boards)
	}
	return rows.Err()
}

// openRaw gives the raw run a fresh database with the service's own board
// and ticket tables (its migrations), plus the seed's per-board
// max_ticket_id: both runs write the same rows under the same keys.
func openRaw(ctx context.Context, dsn string, conns int) (*sql.DB, error) {
	cfg, err := storage.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(cfg.DBName, "bench") {
		return nil, fmt.Errorf("-dsn names database %q; the raw run drops and recreates it, so its name must contain \"bench\"", cfg.DBName)
	}
	server := cfg.Clone()
	server.DBName = ""
	if err := execOn(ctx, server, "DROP DATABASE IF EXISTS `"+cfg.DBName+"`"); err != nil {
		return nil, err
	}
	db, err := storage.Open(ctx, dsn, storage.Options{MaxOpenConns: conns})
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, "ALTER TABLE board ADD COLUMN max_ticket_id BIGINT NOT NULL DEFAULT 0"); err != nil {
		db.Close()
		return nil, err
	}
	return db.DB, nil
}

func execOn(ctx context.Context, cfg *mysql.Config, stmt string) error {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	_, err = db.ExecContext(ctx, stmt)
	return err
}
