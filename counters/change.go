package counters

import (
	"context"
	"time"
)

// The change seam. Every write of a counter, whichever path it takes
// (increment, coalesced round, batch, set, reset, delete, import, and so
// page hits and ticket numbers, which increment), reports what it changed
// as Changes through one place in the store, on two sides:
//
//   - inside the change's transaction, work that must commit with it or not
//     at all: history, webhook events. The store runs its recorders there
//     (storage.Recorder: only storage knows SQL), with the changes' Prev and
//     Value known, and commits them together.
//   - after the commit, work that follows it: live updates. The store calls
//     its Observers before the write returns.
//
// A consumer is one registration in internal/wire. A write path that does
// not report through the seam fails storage's TestEveryWritePathReportsItsChanges.

// Change is what one committed write did to one counter: one Change per
// counter per transaction, however many increments the transaction carried
// (a coalesced round of 64 increments of one counter is one Change, with the
// value before the round and after it).
type Change struct {
	Name string
	// Prev is the value before the change, 0 for a counter the change
	// created. Value is the value after it; for a deletion, the last value.
	Prev, Value int64
	// Deleted says the change removed the counter.
	Deleted bool
	// Steps are the increments' steps and when each counts in the
	// counter's history (see HistoryGrain); they add up to Value-Prev. Nil
	// for sets, resets, imports and deletions, which are not counted.
	Steps []Part
	// At is when the store made the change, by its clock: its commit time
	// to the microsecond, in UTC.
	At time.Time
}

// Observer is told of changes after they committed. Committed runs in the
// writer's goroutine before the write is answered, so it must not block:
// an observer that does I/O hands the changes to work of its own. It is not
// told of a write whose outcome is unknown (MySQL failed during the
// commit); such a change is found by whoever checks MySQL later.
type Observer interface {
	Committed(ctx context.Context, changes []Change)
}

// Observers is an Observer that tells each of its members in turn.
type Observers []Observer

// Committed implements Observer.
func (os Observers) Committed(ctx context.Context, changes []Change) {
	for _, o := range os {
		o.Committed(ctx, changes)
	}
}
