package storage

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// Batch implements counters.Store.
func (s *CounterStore) Batch(ctx context.Context, items []counters.Increment) ([]int64, error) {
	var values []int64
	err := s.seam.writeTx(ctx, s.db, "storage.Batch", func(tx *sql.Tx) (changes []counters.Change, err error) {
		values, changes, err = batchTx(ctx, tx, items, s.now())
		return changes, err
	})
	if err != nil {
		return nil, mapError("storage.Batch", err, true)
	}
	return values, nil
}

// batchTx applies the increments inside tx in three statements, whatever
// the batch's size:
//
//  1. lock every counter of the batch, creating the missing ones at 0, in
//     byte order of the names: two batches over the same counters take
//     their locks in the same order, whatever the order of their items, so
//     they queue instead of deadlocking;
//  2. read the locked values and bounds;
//  3. compute the items in request order here (a name may come twice; each
//     item sees the previous ones), checking int64 overflow and bounds per
//     item, and write each counter's final value.
//
// An item that fails returns its error (see counters.ItemError) before
// anything is written; the caller rolls back, which also removes the
// counters step 1 created. The changes are one per counter, in name order,
// for the caller to record. now is the store's clock.
func batchTx(ctx context.Context, tx *sql.Tx, items []counters.Increment, now time.Time) ([]int64, []counters.Change, error) {
	names := make([]string, len(items))
	for i, it := range items {
		names[i] = it.Name
	}
	slices.Sort(names)
	names = slices.Compact(names)

	args := make([]any, 0, 3*len(names))
	for _, n := range names {
		args = append(args, n, now, now)
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO counter (name, value, created_at, updated_at) VALUES "+
		placeholders("(?, 0, ?, ?)", ", ", len(names))+" ON DUPLICATE KEY UPDATE name = name", args...)
	if err != nil {
		return nil, nil, err
	}

	current, err := lockedCounters(ctx, tx, names)
	if err != nil {
		return nil, nil, err
	}
	changes := make([]counters.Change, len(names))
	for i, n := range names {
		changes[i] = counters.Change{Name: n, Prev: current[n].Value, At: now}
	}
	values := make([]int64, len(items))
	for i, it := range items {
		c := current[it.Name]
		next, ok := counters.Add(c.Value, it.By)
		if !ok {
			return nil, nil, counters.ItemError(i, it.Name, counters.Errorf(counters.EOUTOFRANGE,
				"The result would leave the signed 64-bit range; nothing was changed."))
		}
		c.Value = next
		if err := c.CheckBounds(); err != nil {
			return nil, nil, counters.ItemError(i, it.Name, err)
		}
		values[i] = next
		j, _ := slices.BinarySearch(names, it.Name)
		changes[j].Steps = append(changes[j].Steps, counters.Part{At: now, By: it.By, Extra: it.Extra})
	}

	// One UPDATE for all counters: value = CASE name WHEN ? THEN ? ... END.
	args = args[:0]
	for _, n := range names {
		args = append(args, n, current[n].Value)
	}
	args = append(args, now)
	for _, n := range names {
		args = append(args, n)
	}
	_, err = tx.ExecContext(ctx, "UPDATE counter SET value = CASE name "+placeholders("WHEN ? THEN ?", " ", len(names))+
		" END, updated_at = "+newerThanStored("?")+" WHERE name IN ("+placeholders("?", ", ", len(names))+")", args...)
	if err != nil {
		return nil, nil, err
	}
	for i := range changes {
		changes[i].Value = current[changes[i].Name].Value
	}
	return values, changes, nil
}

// lockedCounters reads the named counters, which the caller has locked.
func lockedCounters(ctx context.Context, tx *sql.Tx, names []string) (map[string]*counters.Counter, error) {
	args := make([]any, len(names))
	for i, n := range names {
		args[i] = n
	}
	rows, err := tx.QueryContext(ctx, "SELECT "+counterColumns+" FROM counter WHERE name IN ("+placeholders("?", ", ", len(names))+")", args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byName := make(map[string]*counters.Counter, len(names))
	for rows.Next() {
		c, err := scanCounter(rows)
		if err != nil {
			return nil, err
		}
		byName[c.Name] = c
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(byName) != len(names) {
		return nil, errAgain // cannot happen while the rows are locked; be safe
	}
	return byName, nil
}
