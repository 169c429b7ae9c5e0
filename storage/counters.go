package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/countersvc/countersvc/counters"
)

// incrementSQL is the whole increment: one upsert whose new value MySQL
// remembers with LAST_INSERT_ID(expr) and returns in the OK packet, so no
// second query and no transaction are needed. The CAST keeps negative
// results signed (LAST_INSERT_ID is BIGINT UNSIGNED); a result outside the
// counter's bounds assigns NULL to a NOT NULL column, which strict mode turns
// into error 1048 with nothing changed; an int64 overflow is error 1690.
// updated_at only moves forward (see newerThanStored).
// Parameters: name, by, now, now, by, by, by.
var incrementSQL = incrementStatement(false)

// incrementSlotSQL is incrementSQL that also adds the step to the
// counter's history slot (see history_write.go), still one statement; a
// slot of another quarter refuses it as a bound does.
// Parameters: name, by, now, now, quarter, by, by, by, by.
var incrementSlotSQL = incrementStatement(true)

// quietIncrementStatement is the increment of a counter that only quiet
// recorders want (see QuietRecorder), given the range [lo, hi] within
// which its changes record nothing: one UPDATE that refuses, as a bound
// does, a step from or to a value outside it, and with slot adds the step
// (not 0) to the history slot as incrementSlotSQL does. An UPDATE and not
// an upsert: a counter that does not exist yet changes from 0, which the
// range may not hold; its increment finds no row and goes the usual way.
// The new value comes back in the OK packet, as incrementSQL's does.
// Parameters: by, by, lo, hi, by, lo, hi, [quarter,] by, [quarter, by,
// by, quarter,] now, name.
func quietIncrementStatement(slot bool) string {
	free, update := "", ""
	if slot {
		free = "\n             AND (history_quarter IS NULL OR history_quarter = ? OR history_sum = 0)"
		update = "\n  history_sum = IF(history_quarter = ?, history_sum + ?, ?),\n  history_quarter = ?,"
	}
	return `UPDATE counter SET
  value = IF((min_value IS NULL OR value + ? >= min_value) AND (max_value IS NULL OR value + ? <= max_value)
             AND value BETWEEN ? AND ? AND value + ? BETWEEN ? AND ?` + free + `,
             CAST(LAST_INSERT_ID(value + ?) AS SIGNED), NULL),` + update + `
  updated_at = ` + newerThanStored("?") + `
WHERE name = ?`
}

func incrementStatement(slot bool) string {
	cols, values, free, update := "", "", "", ""
	if slot {
		cols, values, free, update = slotColumns, ", ?, ?", " AND "+slotFree, slotUpdate
	}
	return `INSERT INTO counter (name, value, created_at, updated_at` + cols + `)
VALUES (?, CAST(LAST_INSERT_ID(?) AS SIGNED), ?, ?` + values + `)
ON DUPLICATE KEY UPDATE
  value = IF((min_value IS NULL OR value + ? >= min_value) AND (max_value IS NULL OR value + ? <= max_value)` + free + `,
             CAST(LAST_INSERT_ID(value + ?) AS SIGNED), NULL),` + update + `
  updated_at = ` + newerThanStored("VALUES(updated_at)")
}

const counterColumns = "name, value, min_value, max_value, created_at, updated_at"

// CounterStore implements counters.Store on MySQL.
type CounterStore struct {
	db            *sql.DB
	incrementStmt *sql.Stmt        // incrementSQL
	slotStmt      *sql.Stmt        // incrementSlotSQL
	quietStmts    [2]*sql.Stmt     // quietIncrementStatement, without and with the slot
	upserts       *preparedUpserts // many counters at once, where Returning
	keys          *keyGate         // one request per idempotency key in MySQL
	slots         slotFill         // what this process put into label slots
	Now           func() time.Time // injectable clock

	// KeyRetention is how long an idempotency key is kept; tests shorten it.
	KeyRetention time.Duration

	// History says increments also add their steps to the counter's
	// history (see history_write.go, its tally and its slot), in their own
	// transaction. On by
	// default; off, an increment is the one statement above and history
	// stays as it was (COUNTERS_HISTORY=false, for comparisons).
	History bool

	// Returning says the server hands back rows with INSERT ... RETURNING,
	// which lets a multi-counter increment read its new values in the same
	// statement. Open asks the server (see probeReturning); tests clear it
	// to exercise the path of servers without it (MySQL).
	Returning bool

	// Exchanges says a transaction may be sent as one multi-statement
	// exchange (START TRANSACTION; ...; COMMIT), in one round trip. Open
	// clears it on a Galera node, where it loses acknowledged writes: a
	// transaction that a replicated write aborts (a brute-force abort)
	// between two statements of one exchange is rolled back, yet the
	// statements after the abort run and the COMMIT answers OK. Measured
	// on three nodes of MariaDB 10.11 with galera-4, 12 clients on one
	// counter for 6 s: 1,819 increments acknowledged, 11 of them twice
	// over and lost. Without it no statement follows a write in one
	// exchange: the write ends its round trip, and what follows, COMMIT
	// included, goes a round trip each (see exchangeOf), so that a node
	// reports an abort at the next one and retry runs the transaction
	// again (measured alike: 1,610 acknowledged, none lost).
	Exchanges bool

	history historyTally // history's write side, the first of the tallies (history_write.go)
	seam    changeSeam   // the tallies, recorders and observers of every write (changes.go)
}

var (
	_ counters.Store     = (*CounterStore)(nil)
	_ counters.OnceStore = (*CounterStore)(nil)
	_ counters.Importer  = (*CounterStore)(nil)
)

// NewCounterStore prepares the hot statements once, so that each increment
// is a single round trip in the binary protocol.
func NewCounterStore(ctx context.Context, db *DB) (*CounterStore, error) {
	var stmts []*sql.Stmt
	for _, q := range []string{incrementSQL, incrementSlotSQL, quietIncrementStatement(false), quietIncrementStatement(true)} {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			for _, st := range stmts {
				st.Close()
			}
			return nil, err
		}
		stmts = append(stmts, st)
	}
	s := &CounterStore{db: db.DB, incrementStmt: stmts[0], slotStmt: stmts[1], quietStmts: [2]*sql.Stmt{stmts[2], stmts[3]}, upserts: newPreparedUpserts(db.DB), keys: newKeyGate(), Now: time.Now,
		KeyRetention: counters.IdempotencyRetention, Returning: db.returning, History: true, Exchanges: !db.galera}
	s.history = historyTally{db: s.db, on: &s.History}
	s.seam.tallies.add(s.history)
	return s, nil
}

// Close releases the prepared statements.
func (s *CounterStore) Close() error {
	return errors.Join(s.incrementStmt.Close(), s.slotStmt.Close(), s.quietStmts[0].Close(), s.quietStmts[1].Close(), s.upserts.Close())
}

func (s *CounterStore) now() time.Time { return s.Now().UTC().Truncate(time.Microsecond) }

// Increment implements counters.Store. A deadlock rolls the statement back
// whole, so it is run again like any transaction (see retry). With history
// the step goes to the counter's slot in the same one statement (see
// incrementSlot); when a recorder wants the counter, the value, its
// history and the recorders' writes go in one transaction, still in one
// round trip where the server allows (see incrementInExchange).
func (s *CounterStore) Increment(ctx context.Context, name string, by int64) (int64, error) {
	inc := counters.Increment{Name: name, By: by}
	var c counters.Change
	err := retry(ctx, "storage.Increment", func() (err error) {
		now := s.now()
		var v int64
		switch recorded := s.seam.recorded(name); {
		case recorded:
			v, err = s.incrementQuiet(ctx, inc, now)
		case s.History && by != 0:
			v, err = s.incrementSlot(ctx, inc, now)
		default:
			v, err = s.increment(ctx, nil, name, by, now)
		}
		c = incrementChange(inc, v, now)
		return err
	})
	if err != nil {
		return 0, mapError("storage.Increment", err, true)
	}
	s.seam.committed(ctx, []counters.Change{c})
	return c.Value, nil
}

// incrementSlot is the increment with history in one statement,
// incrementSlotSQL. When the statement refuses the step, a bound or the
// slot holding another quarter refused it: the slot is moved (see
// flushSlots) and the increment written the other writers' way, which
// reports a bound's refusal exactly.
func (s *CounterStore) incrementSlot(ctx context.Context, inc counters.Increment, now time.Time) (int64, error) {
	q, by := quarterNumber(now), inc.By
	res, err := s.slotStmt.ExecContext(ctx, inc.Name, by, now, now, q, by, by, by, by)
	if err == nil {
		return res.LastInsertId()
	}
	if again, err := s.history.refused(ctx, err, true, now, inc.Name); !again {
		return 0, err
	}
	return s.incrementInExchange(ctx, inc, now, false)
}

// incrementQuiet is the increment of a counter that recorders want. When
// they can tell a range within which its changes record nothing, it is one
// statement (see quietIncrementStatement); a step it refuses (a bound, the range, the
// slot) or a counter it does not find is written in one transaction with
// the recorders, which tells which.
func (s *CounterStore) incrementQuiet(ctx context.Context, inc counters.Increment, now time.Time) (int64, error) {
	lo, hi, ok := s.seam.quiet(inc.Name)
	if !ok {
		return s.incrementInExchange(ctx, inc, now, true)
	}
	by, q := inc.By, quarterNumber(now)
	slot := s.History && by != 0
	var res sql.Result
	var err error
	if slot {
		res, err = s.quietStmts[1].ExecContext(ctx, by, by, lo, hi, by, lo, hi, q, by, q, by, by, q, now, inc.Name)
	} else {
		res, err = s.quietStmts[0].ExecContext(ctx, by, by, lo, hi, by, lo, hi, by, now, inc.Name)
	}
	if err == nil {
		n, err := res.RowsAffected()
		if err != nil {
			return 0, err
		}
		if n == 1 {
			return res.LastInsertId()
		} // else there is no such counter yet
	} else if again, err := s.history.refused(ctx, err, slot, now, inc.Name); !again {
		return 0, err
	}
	return s.incrementInExchange(ctx, inc, now, true)
}

// incrementInExchange sends incrementSQL and its history's upsert as one
// transaction in one round trip: START TRANSACTION; upsert; history; COMMIT.
// The new value is the upsert's insert id, which the driver keeps for every
// statement of the exchange (mysql.Result, reached through Raw because
// database/sql's Result hides it): no RETURNING, no read-back. A refused
// step (1048, 1690) stops the exchange before the history, and the
// transaction is rolled back, so neither changes. Where a transaction may
// not be one exchange (see Exchanges) the history and the COMMIT follow
// in round trips of their own: the upsert ends the first, so a node that
// aborts the transaction after it reports so at the next. When a recorder
// wants the counter, the COMMIT waits for it: it needs the new value,
// which only the first round trip tells, so such an increment takes one
// more (recorded).
func (s *CounterStore) incrementInExchange(ctx context.Context, inc counters.Increment, now time.Time, recorded bool) (int64, error) {
	rest := s.seam.tallies.counts([]counters.Change{incrementChange(inc, 0, now)})
	by := inc.By
	first, rest := exchangeOf(s.Exchanges, statement{"START TRANSACTION;\n" + incrementSQL, []any{inc.Name, by, now, now, by, by, by}}, rest, !recorded)
	const upsert = 1 // the statement after START TRANSACTION
	named := make([]driver.NamedValue, len(first.args))
	for i, a := range first.args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	var v int64
	err := exchange(ctx, s.db, func(conn *sql.Conn) error {
		err := conn.Raw(func(dc any) error {
			res, err := dc.(driver.ExecerContext).ExecContext(ctx, first.query, named)
			if err != nil {
				return err
			}
			ids := res.(mysql.Result).AllLastInsertIds()
			if len(ids) <= upsert {
				return fmt.Errorf("storage: %d results from the increment's exchange", len(ids))
			}
			v = ids[upsert]
			return nil
		})
		if err != nil {
			return err
		}
		if err := sendEach(ctx, conn, rest, nil); err != nil || !recorded {
			return err
		}
		return s.seam.commitRecorded(ctx, conn, []counters.Change{incrementChange(inc, v, now)})
	})
	return v, err
}

// increment runs incrementSQL on its own (for the callers that need
// neither history nor recorders), or inside tx when tx is not nil (for
// callers that commit it together with other changes, and then record it
// themselves), and returns the value it produced.
func (s *CounterStore) increment(ctx context.Context, tx *sql.Tx, name string, by int64, now time.Time) (int64, error) {
	stmt := s.incrementStmt
	if tx != nil {
		stmt = tx.StmtContext(ctx, stmt)
	}
	res, err := stmt.ExecContext(ctx, name, by, now, now, by, by, by)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// Get implements counters.Store.
func (s *CounterStore) Get(ctx context.Context, name string) (*counters.Counter, error) {
	c, err := scanCounter(s.db.QueryRowContext(ctx, "SELECT "+counterColumns+" FROM counter WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, counters.Errorf(counters.ENOTFOUND, "Counter not found.")
	}
	return c, mapError("storage.Get", err, false)
}

// Set implements counters.Store. It runs again when a concurrent Set created
// the counter between its read and its insert.
func (s *CounterStore) Set(ctx context.Context, req counters.SetRequest) (*counters.Counter, bool, error) {
	var c *counters.Counter
	var created bool
	err := s.seam.writeTx(ctx, s.db, "storage.Set", func(tx *sql.Tx) (_ []counters.Change, err error) {
		var ch counters.Change
		c, created, ch, err = setTx(ctx, tx, req, s.now())
		return []counters.Change{ch}, err
	})
	if err != nil {
		return nil, false, mapError("storage.Set", err, true)
	}
	return c, created, nil
}

// setTx sets a counter inside tx and returns the change; see Set. When
// another transaction created the counter first, it returns ECONFLICT for a
// create-only request and errAgain for any other: run again, the counter
// now exists. now is the store's clock.
func setTx(ctx context.Context, tx *sql.Tx, req counters.SetRequest, now time.Time) (*counters.Counter, bool, counters.Change, error) {
	c, created, prev, err := setRow(ctx, tx, req, now)
	if err != nil {
		return nil, false, counters.Change{}, err
	}
	return c, created, counters.Change{Name: c.Name, Prev: prev, Value: c.Value, At: c.UpdatedAt}, nil
}

// setRow is setTx's write; it also returns the value before it.
func setRow(ctx context.Context, tx *sql.Tx, req counters.SetRequest, now time.Time) (*counters.Counter, bool, int64, error) {
	var value int64
	var minV, maxV sql.NullInt64
	var createdAt time.Time
	err := tx.QueryRowContext(ctx, "SELECT value, min_value, max_value, created_at FROM counter WHERE name = ? FOR UPDATE", req.Name).
		Scan(&value, &minV, &maxV, &createdAt)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		c := &counters.Counter{Name: req.Name, Value: req.Value, Min: boundOrNil(req.Min), Max: boundOrNil(req.Max), CreatedAt: now, UpdatedAt: now}
		_, err := tx.ExecContext(ctx, "INSERT INTO counter ("+counterColumns+") VALUES (?, ?, ?, ?, ?, ?)",
			c.Name, c.Value, nullable(c.Min), nullable(c.Max), now, now)
		switch {
		case isDuplicate(err) && req.CreateOnly:
			return nil, false, 0, counters.Errorf(counters.ECONFLICT, "Counter already exists.")
		case isDuplicate(err):
			return nil, false, 0, errAgain
		case err != nil:
			return nil, false, 0, err
		}
		return c, true, 0, nil
	case err != nil:
		return nil, false, 0, err
	case req.CreateOnly:
		return nil, false, 0, counters.Errorf(counters.ECONFLICT, "Counter already exists.")
	}
	c := &counters.Counter{Name: req.Name, Value: req.Value, Min: pick(req.Min, minV), Max: pick(req.Max, maxV), CreatedAt: createdAt, UpdatedAt: now}
	if err := c.CheckBounds(); err != nil {
		return nil, false, 0, err
	}
	_, err = tx.ExecContext(ctx, "UPDATE counter SET value = ?, min_value = ?, max_value = ?, updated_at = "+newerThanStored("?")+" WHERE name = ?",
		c.Value, nullable(c.Min), nullable(c.Max), now, c.Name)
	if err != nil {
		return nil, false, 0, err
	}
	return c, false, value, nil
}

// Delete implements counters.Store: the counter and what its tallies kept
// (its history, its labels) go in one transaction, the counter's row
// first, as every writer of a tally locks it, then each tally's rows in
// the order registered.
// The row is read before it goes, for the change's last value.
func (s *CounterStore) Delete(ctx context.Context, name string) error {
	err := s.seam.writeTx(ctx, s.db, "storage.Delete", func(tx *sql.Tx) ([]counters.Change, error) {
		var value int64
		err := tx.QueryRowContext(ctx, "SELECT value FROM counter WHERE name = ? FOR UPDATE", name).Scan(&value)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, counters.Errorf(counters.ENOTFOUND, "Counter not found.")
		} else if err != nil {
			return nil, err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM counter WHERE name = ?", name); err != nil {
			return nil, err
		}
		if err := s.seam.tallies.deletes(ctx, tx, name); err != nil {
			return nil, err
		}
		return []counters.Change{{Name: name, Prev: value, Value: value, Deleted: true, At: s.now()}}, nil
	})
	return mapError("storage.Delete", err, true)
}

// List implements counters.Store with keyset pagination on the primary key.
// It reads one row more than asked to know whether another page follows.
// Hidden reserved names are left out by the WHERE, so that the LIMIT
// counts only the names shown.
func (s *CounterStore) List(ctx context.Context, f counters.ListFilter) (*counters.Page, error) {
	query := "SELECT " + counterColumns + " FROM counter WHERE name > ?"
	args := []any{f.After}
	if f.Prefix != "" {
		query += " AND name LIKE ? ESCAPE '!'"
		args = append(args, likePrefix(f.Prefix))
	}
	if f.HideReserved {
		query += " AND " + notReserved
	}
	query += " ORDER BY name LIMIT ?"
	args = append(args, f.Limit+1)
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, mapError("storage.List", err, false)
	}
	items, next, err := scanPage(rows, f.Limit, scanCounter, func(c *counters.Counter) string { return c.Name })
	if err != nil {
		return nil, mapError("storage.List", err, false)
	}
	return &counters.Page{Counters: items, NextAfter: next}, nil
}

// Reset implements counters.Store in one transaction: it locks and reads
// the matched counters (for their changes' previous values), then sets
// them in one statement, so it is all or nothing: a counter whose bounds
// exclude the value makes the statement fail (NULL into NOT NULL) and
// nothing changes. Reserved names are never matched.
func (s *CounterStore) Reset(ctx context.Context, req counters.ResetRequest) (int64, error) {
	where := " WHERE " + notReserved
	var args []any
	if !req.All {
		where += " AND name LIKE ? ESCAPE '!'"
		args = append(args, likePrefix(req.Prefix))
	}
	var n int64
	err := s.seam.writeTx(ctx, s.db, "storage.Reset", func(tx *sql.Tx) ([]counters.Change, error) {
		now := s.now()
		rows, err := tx.QueryContext(ctx, "SELECT name, value FROM counter"+where+" ORDER BY name FOR UPDATE", args...)
		if err != nil {
			return nil, err
		}
		prev, err := scanResultSets(rows)
		if err != nil {
			return nil, err
		}
		res, err := tx.ExecContext(ctx, `UPDATE counter SET
			value = IF((min_value IS NULL OR ? >= min_value) AND (max_value IS NULL OR ? <= max_value), ?, NULL),
			updated_at = `+newerThanStored("?")+where, append([]any{req.Value, req.Value, req.Value, now}, args...)...)
		if mysqlErrNumber(err) == erBadNull {
			return nil, counters.Errorf(counters.EOUTOFRANGE, "The value %d is outside the bounds of at least one matched counter; nothing was changed.", req.Value)
		} else if err != nil {
			return nil, err
		}
		if n, err = res.RowsAffected(); err != nil {
			return nil, err
		}
		changes := make([]counters.Change, 0, len(prev))
		for _, name := range slices.Sorted(maps.Keys(prev)) {
			changes = append(changes, counters.Change{Name: name, Prev: prev[name], Value: req.Value, At: now})
		}
		return changes, nil
	})
	if err != nil {
		return 0, mapError("storage.Reset", err, true)
	}
	return n, nil
}

// inTx runs fn in a transaction of db at the isolation level iso, and
// commits it when fn succeeds.
func inTx(ctx context.Context, db *sql.DB, iso sql.IsolationLevel, fn func(tx *sql.Tx) error) error {
	return txWith(ctx, db, &sql.TxOptions{Isolation: iso}, fn)
}

// txWith runs fn in a transaction of db begun with opts, and commits it
// when fn succeeds.
func txWith(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}

type scanner interface{ Scan(dest ...any) error }

func scanCounter(row scanner) (*counters.Counter, error) {
	var c counters.Counter
	var minV, maxV sql.NullInt64
	if err := row.Scan(&c.Name, &c.Value, &minV, &maxV, &c.CreatedAt, &c.UpdatedAt); err != nil {
		return nil, err
	}
	c.Min, c.Max = ptr(minV), ptr(maxV)
	return &c, nil
}

// notReserved matches the names that are not reserved: those that do not
// start with counters.ReservedPrefix ("_", escaped as in likePrefix).
const notReserved = "name NOT LIKE '!_%' ESCAPE '!'"

// likePrefix escapes a prefix for LIKE ... ESCAPE '!'.
func likePrefix(p string) string {
	r := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
	return r.Replace(p) + "%"
}

func ptr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	v := n.Int64
	return &v
}

func nullable(p *int64) sql.NullInt64 {
	if p == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: *p, Valid: true}
}

func boundOrNil(b counters.Bound) *int64 {
	if b.Keep {
		return nil
	}
	return b.Value
}

func pick(b counters.Bound, stored sql.NullInt64) *int64 {
	if b.Keep {
		return ptr(stored)
	}
	return b.Value
}
