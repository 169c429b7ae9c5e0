package storage

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/countersvc/countersvc/visitors"
)

// VisitorStore keeps the visitors' daily salts and sketches (see
// visitors.Store and migration 007).
type VisitorStore struct {
	db *sql.DB
}

var _ visitors.Store = (*VisitorStore)(nil)

// NewVisitorStore returns the visitor store of db.
func NewVisitorStore(db *DB) *VisitorStore { return &VisitorStore{db: db.DB} }

// DailySalt implements visitors.Salts: INSERT IGNORE lets exactly one
// process's salt win a race, and everyone reads that one back.
func (s *VisitorStore) DailySalt(ctx context.Context, day time.Time, fresh []byte) ([]byte, error) {
	const op = "storage.DailySalt"
	d := day.UTC().Format(time.DateOnly)
	if _, err := execRetried(ctx, s.db, op, "INSERT IGNORE INTO visitor_salt (day, salt) VALUES (?, ?)", d, fresh); err != nil {
		return nil, mapError(op, err, true)
	}
	var salt []byte
	if err := s.db.QueryRowContext(ctx, "SELECT salt FROM visitor_salt WHERE day = ?", d).Scan(&salt); err != nil {
		return nil, mapError(op, err, false)
	}
	return salt, nil
}

// PurgeSalts implements visitors.Store.
func (s *VisitorStore) PurgeSalts(ctx context.Context, before time.Time) (int64, error) {
	const op = "storage.PurgeSalts"
	res, err := execRetried(ctx, s.db, op, "DELETE FROM visitor_salt WHERE day < ?", before.UTC().Format(time.DateOnly))
	if err != nil {
		return 0, mapError(op, err, true)
	}
	return res.RowsAffected()
}

// MergeSketches implements visitors.Store, one short transaction per
// sketch: the stored sketch is read under its row lock, so that two
// processes uniting into one sketch at once do not lose each other's
// visitors, and a transaction holds one lock only, so that they cannot
// deadlock. The insert goes through the counter's row, so that a counter
// deleted since gets no sketch (and the foreign key holds).
func (s *VisitorStore) MergeSketches(ctx context.Context, sketches []visitors.Sketch, merge func(stored, add []byte) ([]byte, error)) error {
	const op = "storage.MergeSketches"
	for _, sk := range sketches {
		d := sk.Day.UTC().Format(time.DateOnly)
		err := retry(ctx, op, func() error {
			tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
			if err != nil {
				return err
			}
			defer tx.Rollback()
			var stored []byte
			err = tx.QueryRowContext(ctx, "SELECT sketch FROM visitor_sketch WHERE name = ? AND day = ? FOR UPDATE", sk.Name, d).Scan(&stored)
			switch {
			case err == sql.ErrNoRows:
				_, err = tx.ExecContext(ctx, "INSERT INTO visitor_sketch (name, day, sketch) SELECT name, ?, ? FROM counter WHERE name = ?", d, sk.Data, sk.Name)
				if isDuplicate(err) {
					return errAgain // another process created it first: unite with it
				}
			case err == nil:
				var united []byte
				if united, err = merge(stored, sk.Data); err != nil {
					return err
				}
				_, err = tx.ExecContext(ctx, "UPDATE visitor_sketch SET sketch = ? WHERE name = ? AND day = ?", united, sk.Name, d)
			}
			if err != nil {
				return err
			}
			return tx.Commit()
		})
		if err != nil {
			return mapError(op, err, true)
		}
	}
	return nil
}

// Sketches implements visitors.Store.
func (s *VisitorStore) Sketches(ctx context.Context, name, prefix string, from, to time.Time) ([]visitors.Sketch, error) {
	const op = "storage.Sketches"
	f, t := from.UTC().Format(time.DateOnly), to.UTC().Format(time.DateOnly)
	var rows *sql.Rows
	var err error
	if name != "" {
		rows, err = s.db.QueryContext(ctx, "SELECT name, day, sketch FROM visitor_sketch WHERE name = ? AND day >= ? AND day < ?", name, f, t)
	} else {
		rows, err = s.db.QueryContext(ctx, "SELECT name, day, sketch FROM visitor_sketch WHERE day >= ? AND day < ? AND name LIKE ? ESCAPE '!'", f, t, likePrefix(prefix))
	}
	if err != nil {
		return nil, mapError(op, err, false)
	}
	defer rows.Close()
	var out []visitors.Sketch
	for rows.Next() {
		var sk visitors.Sketch
		if err := rows.Scan(&sk.Name, &sk.Day, &sk.Data); err != nil {
			return nil, mapError(op, err, false)
		}
		out = append(out, sk)
	}
	if err := rows.Err(); err != nil {
		return nil, mapError(op, err, false)
	}
	return out, nil
}

// SketchBytes is the storage the sketches of the counters under prefix
// take (their encoded length), for the measured cost in docs/visitors.md.
func (s *VisitorStore) SketchBytes(ctx context.Context, prefix string) (rows, bytes int64, err error) {
	err = s.db.QueryRowContext(ctx, "SELECT COUNT(*), COALESCE(SUM(LENGTH(sketch)), 0) FROM visitor_sketch WHERE name LIKE ? ESCAPE '!'", likePrefix(prefix)).Scan(&rows, &bytes)
	if err != nil {
		return 0, 0, mapError("storage.SketchBytes", fmt.Errorf("sizing sketches: %w", err), false)
	}
	return rows, bytes, nil
}
