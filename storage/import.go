package storage

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// importChunk is how many lines an import writes per statement, and
// without atomic per transaction: six parameters a row keeps a statement
// far below MySQL's 65,535 placeholders, and a thousand rows amortise a
// commit's log flush while a chunk's row locks are held only briefly.
const importChunk = 1000

// Import implements counters.Store. Each chunk of lines runs in one
// transaction (with Atomic, all of them in one): it locks the chunk's
// existing counters (SELECT ... FOR UPDATE, in name order, as every
// multi-counter write here), inserts the missing ones with a plain INSERT
// (a concurrent creation in between makes it a duplicate, and the chunk
// runs again) and, in mode overwrite, replaces the locked ones with an
// upsert that can only update. So each line is applied whole or not at
// all, and the report's counts are exact. A name that comes again starts
// a new chunk, so a statement never names a counter twice; later lines
// then see earlier ones, as if applied one by one.
//
// An import writes no history: like PUT, it sets values rather than
// counting what happened.
//
// With a key, a recorded key's report is replayed once the lines (and so
// their fingerprint) are read, changing nothing; otherwise the key is
// recorded in the last transaction, with the report. Two processes running
// one key at the same instant may both apply their lines (the same lines:
// the same values); the first to record its report is the one replayed.
func (s *CounterStore) Import(ctx context.Context, opts counters.ImportOptions, lines iter.Seq[counters.ImportLine]) (*counters.ImportReport, error) {
	const op = "storage.Import"
	r := counters.NewImportReport(opts)
	if opts.Key != nil {
		leave, err := s.keys.enter(ctx, gateKey(*opts.Key))
		if err != nil {
			return r, counters.Wrap(counters.EUNAVAILABLE, op, err,
				"An earlier request with this Idempotency-Key is still running; nothing was changed.")
		}
		defer leave()
		prior, err := recordedResult(ctx, s.db, opts, s.now)
		if err != nil {
			return r, mapError(op, err, false)
		}
		if prior != nil {
			return replayImport(opts, lines, prior)
		}
	}
	im := &importer{s: s, opts: opts, r: r}
	if opts.Atomic {
		return im.atomic(ctx, lines)
	}
	return im.chunked(ctx, lines)
}

// importer is one import under way.
type importer struct {
	s    *CounterStore
	opts counters.ImportOptions
	r    *counters.ImportReport
}

// chunk is the lines read since the last write, by name.
type chunk struct {
	lines []counters.ImportLine
	names map[string]bool
}

func newChunk() *chunk { return &chunk{names: make(map[string]bool, importChunk)} }

func (c *chunk) reset() {
	c.lines = c.lines[:0]
	clear(c.names)
}

// chunkResult is what writing one chunk did, kept apart from the report
// until its transaction commits.
type chunkResult struct {
	created, overwritten int64
	skipped              []counters.ImportLine
	changes              []counters.Change // for the change seam
}

func (res chunkResult) addTo(r *counters.ImportReport) {
	r.Created += res.created
	r.Overwritten += res.overwritten
	for _, l := range res.skipped {
		r.Skip(l)
	}
}

// report is res as a report of its own, to merge.
func (res chunkResult) report() *counters.ImportReport {
	r := &counters.ImportReport{}
	res.addTo(r)
	return r
}

// read runs over lines, refusing what a check refused, and calls write
// whenever the chunk is full or a name comes again, and at the end; it
// stops at the input's error or write's.
func (im *importer) read(lines iter.Seq[counters.ImportLine], write func(c *chunk, last bool) error) error {
	c := newChunk()
	for l := range lines {
		if l.Err != nil {
			return l.Err
		}
		im.r.Read++
		if l.Reason != "" {
			im.r.Refuse(l)
			continue
		}
		if c.names[l.Counter.Name] || len(c.lines) == importChunk {
			if err := write(c, false); err != nil {
				return err
			}
			c.reset()
		}
		c.names[l.Counter.Name] = true
		c.lines = append(c.lines, l)
	}
	return write(c, true)
}

// chunked commits each chunk on its own; the last one records the key.
func (im *importer) chunked(ctx context.Context, lines iter.Seq[counters.ImportLine]) (*counters.ImportReport, error) {
	const op = "storage.Import"
	var failed *chunk
	err := im.read(lines, func(c *chunk, last bool) error {
		var res chunkResult
		err := im.step(ctx, func(ctx context.Context) error {
			return im.s.seam.writeTx(ctx, im.s.db, op, func(tx *sql.Tx) (_ []counters.Change, err error) {
				if res, err = im.write(ctx, tx, c); err != nil || !last || im.opts.Key == nil {
					return res.changes, err
				}
				return res.changes, im.record(ctx, tx, res.report())
			})
		})
		if err != nil {
			failed = c
			return err
		}
		res.addTo(im.r)
		return nil
	})
	if err == nil {
		im.r.Applied = true
		return im.r, nil
	}
	im.r.Applied = im.r.Created+im.r.Overwritten > 0
	return im.r, im.stopped(err, failed)
}

// atomic writes every chunk in one transaction, committed only when no
// line was refused. After a refusal it reads on without writing, so that
// the report names every refused line. The transaction cannot run again
// (the lines are gone), so a deadlock fails the import, changing nothing.
func (im *importer) atomic(ctx context.Context, lines iter.Seq[counters.ImportLine]) (*counters.ImportReport, error) {
	const op = "storage.Import"
	tx, err := im.s.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return im.r, mapError(op, err, false)
	}
	defer tx.Rollback()
	// What the transaction did, counted apart until it commits; like the
	// report, it lists at most MaxReportedLines lines, however many it
	// skips.
	pending := &counters.ImportReport{}
	var changes []counters.Change
	var prefix string
	var changed bool
	err = im.read(lines, func(c *chunk, last bool) error {
		if im.r.Refused > 0 {
			return nil
		}
		return im.step(ctx, func(ctx context.Context) error {
			res, err := im.write(ctx, tx, c)
			res.addTo(pending)
			if err != nil {
				return err
			}
			if err := im.s.seam.record(ctx, tx, res.changes); err != nil {
				return err
			}
			// Only what an observer must be told change by change waits
			// for the commit: an atomic import may change a million
			// counters. The others are told the names' common prefix.
			changes = append(changes, counters.Wanted(res.changes, im.s.seam.heldForCommit)...)
			for _, c := range res.changes {
				prefix, changed = counters.CommonPrefix(prefix, c.Name, changed), true
			}
			if !last || im.opts.Key == nil || im.r.Refused > 0 {
				return nil
			}
			return im.record(ctx, tx, pending)
		})
	})
	if err == nil && im.r.Refused > 0 {
		return im.r, im.r.Err()
	}
	if err != nil {
		var de *counters.Error
		if !errors.As(err, &de) {
			err = mapError(op, err, false) // rolled back: the transaction never committed
		}
		return im.r, counters.Wrap(counters.ErrorCode(err), op, err, strings.TrimSuffix(counters.ErrorMessage(err), ".")+
			"; the import is atomic, so nothing was imported.")
	}
	if err := tx.Commit(); err != nil {
		return im.r, counters.Wrap(counters.EUNAVAILABLE, op, err,
			"The database could not be reached while the import committed: either every line was applied or none was.")
	}
	im.s.seam.committedAtOnce(ctx, changes, prefix, changed)
	im.r.Merge(pending)
	im.r.Applied = true
	return im.r, nil
}

// step runs fn with the import's step timeout.
func (im *importer) step(ctx context.Context, fn func(ctx context.Context) error) error {
	if im.opts.StepTimeout <= 0 {
		return fn(ctx)
	}
	ctx, cancel := context.WithTimeout(ctx, im.opts.StepTimeout)
	defer cancel()
	return fn(ctx)
}

// stopped is the error of a chunked import that failed at chunk c (nil:
// the input broke off): what the report counts was committed, c's lines
// may have been, and no later line was.
func (im *importer) stopped(err error, c *chunk) error {
	const op = "storage.Import"
	var de *counters.Error
	if !errors.As(err, &de) {
		err = mapError(op, err, true)
	}
	msg := strings.TrimSuffix(counters.ErrorMessage(err), ".")
	if c != nil && len(c.lines) > 0 {
		first, last := c.lines[0].Line, c.lines[len(c.lines)-1].Line
		cause, untouched := strings.CutSuffix(msg, "; nothing was changed")
		doubt := "which may or may not have been applied"
		if untouched {
			doubt = "which were not applied"
		}
		cause, _ = strings.CutSuffix(cause, "; the change may or may not have been applied")
		msg = fmt.Sprintf("%s. The import stopped at lines %d to %d, %s; the report counts the lines committed before them, and no later line was applied.",
			cause, first, last, doubt)
	} else {
		msg += ". The report counts the lines that were committed; no later line was applied."
	}
	return counters.Wrap(counters.ErrorCode(err), op, err, msg)
}

// write applies one chunk inside tx, rows in name order.
func (im *importer) write(ctx context.Context, tx *sql.Tx, c *chunk) (chunkResult, error) {
	var res chunkResult
	if len(c.lines) == 0 {
		return res, nil
	}
	rows := slices.Clone(c.lines)
	slices.SortFunc(rows, func(a, b counters.ImportLine) int { return strings.Compare(a.Counter.Name, b.Counter.Name) })
	existing, err := lockExisting(ctx, tx, rows)
	if err != nil {
		return res, err
	}
	now := im.s.now()
	var missing, present []counters.ImportLine
	for _, l := range rows {
		prev, ok := existing[l.Counter.Name]
		if !ok {
			missing = append(missing, l)
			res.changes = append(res.changes, counters.Change{Name: l.Counter.Name, Value: l.Counter.Value, At: now})
		} else if im.opts.Mode == counters.ImportOverwrite {
			present = append(present, l)
			res.changes = append(res.changes, counters.Change{Name: l.Counter.Name, Prev: prev, Value: l.Counter.Value, At: now})
		} else {
			res.skipped = append(res.skipped, l)
		}
	}
	if len(missing) > 0 {
		_, err := tx.ExecContext(ctx, "INSERT INTO counter ("+counterColumns+") VALUES "+placeholders("(?, ?, ?, ?, ?, ?)", ", ", len(missing)),
			importRows(missing, now)...)
		if isDuplicate(err) {
			return res, errAgain // created meanwhile: lock it with the others
		} else if err != nil {
			return res, err
		}
		res.created = int64(len(missing))
	}
	if len(present) > 0 {
		// Every row is locked and exists: this upsert only updates, and
		// keeps each counter's created_at.
		_, err := tx.ExecContext(ctx, "INSERT INTO counter ("+counterColumns+") VALUES "+placeholders("(?, ?, ?, ?, ?, ?)", ", ", len(present))+
			` ON DUPLICATE KEY UPDATE value = VALUES(value), min_value = VALUES(min_value), max_value = VALUES(max_value), updated_at = `+newerThanStored("VALUES(updated_at)"),
			importRows(present, now)...)
		if err != nil {
			return res, err
		}
		res.overwritten = int64(len(present))
	}
	// The skipped lines in the order they came.
	slices.SortFunc(res.skipped, func(a, b counters.ImportLine) int { return int(a.Line - b.Line) })
	return res, nil
}

// lockExisting locks the rows of the lines' counters that exist and
// returns their values by name.
func lockExisting(ctx context.Context, tx *sql.Tx, rows []counters.ImportLine) (map[string]int64, error) {
	args := make([]any, len(rows))
	for i, l := range rows {
		args[i] = l.Counter.Name
	}
	q := "SELECT name, value FROM counter WHERE name IN (" + placeholders("?", ", ", len(rows)) + ") ORDER BY name FOR UPDATE"
	res, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return scanResultSets(res)
}

// importRows are the arguments of the rows of lines, in counterColumns'
// order. A line without created_at is created now.
func importRows(lines []counters.ImportLine, now time.Time) []any {
	args := make([]any, 0, 6*len(lines))
	for _, l := range lines {
		c := &l.Counter
		created := now
		if !c.CreatedAt.IsZero() {
			created = c.CreatedAt.UTC().Truncate(time.Microsecond)
		}
		args = append(args, c.Name, c.Value, nullable(c.Min), nullable(c.Max), created, now)
	}
	return args
}

// record claims the import's key in tx and stores the report it is about
// to commit: the report so far plus pending, what tx did. A key that
// another process recorded meanwhile fails tx with ECONFLICT.
func (im *importer) record(ctx context.Context, tx *sql.Tx, pending *counters.ImportReport) error {
	final := *im.r
	final.Lines = slices.Clone(im.r.Lines)
	final.Merge(pending)
	final.Applied = true
	prior, err := claimKey(ctx, tx, *im.opts.Key, im.s.now(), im.s.KeyRetention)
	if err != nil {
		return err
	}
	if prior != nil {
		return counters.Errorf(counters.ECONFLICT, "Another request with this Idempotency-Key finished first; retry to get its report.")
	}
	record, err := json.Marshal(final)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, "UPDATE idempotency_record SET result = ? WHERE key_id = ? AND idem_key = ?", record, im.opts.Key.Owner, im.opts.Key.Key)
	return err
}

// recordedResult returns the result recorded with the import's key, nil
// when there is none (or it expired). Its fingerprint is checked once the
// lines are read.
func recordedResult(ctx context.Context, db *sql.DB, opts counters.ImportOptions, now func() time.Time) (*recorded, error) {
	var rec recorded
	var expires time.Time
	err := db.QueryRowContext(ctx, "SELECT fingerprint, result, expires_at FROM idempotency_record WHERE key_id = ? AND idem_key = ?",
		opts.Key.Owner, opts.Key.Key).Scan(&rec.fingerprint, &rec.result, &expires)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, err
	case !expires.After(now()) || len(rec.result) == 0:
		return nil, nil
	}
	return &rec, nil
}

type recorded struct{ fingerprint, result []byte }

// replayImport reads the lines only to fingerprint them, and answers the
// recorded report when they are the recorded import's.
func replayImport(opts counters.ImportOptions, lines iter.Seq[counters.ImportLine], prior *recorded) (*counters.ImportReport, error) {
	for l := range lines {
		if l.Err != nil {
			return counters.NewImportReport(opts), counters.Wrap(counters.ErrorCode(l.Err), "storage.Import", l.Err,
				strings.TrimSuffix(counters.ErrorMessage(l.Err), ".")+"; nothing was changed.")
		}
	}
	if !bytes.Equal(prior.fingerprint, opts.Key.Fingerprint[:]) {
		return counters.NewImportReport(opts), counters.Errorf(counters.ECONFLICT, "This Idempotency-Key was already used with a different request; use a new key for a new request.")
	}
	var r counters.ImportReport
	if err := json.Unmarshal(prior.result, &r); err != nil {
		return counters.NewImportReport(opts), counters.Wrap(counters.EINTERNAL, "storage.Import", err, "")
	}
	r.Replayed = true
	return &r, nil
}
