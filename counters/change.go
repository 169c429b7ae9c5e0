package counters

import (
	"context"
	"slices"
	"time"
	"unicode/utf8"
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
// writer's goroutine before the write is answered, so the write's answer
// waits for it: it must be brief and bounded by ctx (the write's
// deadline). An observer whose work the answer must wait for does it here
// (the cache drops the changed entries in Redis, so that no read after the
// answer shows the value before it); one whose work may follow the answer
// (live updates, webhook deliveries) hands the changes to work of its own.
// It is
// told only of the changes it Wants (a DeletionObserver, of every deletion
// too), and not of a write whose outcome is
// unknown (MySQL failed during the commit); such a change is found by
// whoever checks MySQL later.
type Observer interface {
	// Wants reports, without I/O, whether the observer is to be told of
	// changes of the named counter. A write whose counters no observer
	// wants pays nothing for observers, and a large write (an import of a
	// million lines, committed at once) keeps only the changes some
	// observer wants until its commit.
	Wants(name string) bool
	Committed(ctx context.Context, changes []Change)
}

// A DeletionObserver is an Observer told of every deletion, whether it
// Wants the counter or not, when WantsDeletions says so. Live updates need
// that: another process may have begun to watch the counter's prefix a
// moment before, and not be known here yet, and a deletion, unlike other
// changes, leaves no row that a later check could find. Deletions are
// rare, so being told of each costs little.
type DeletionObserver interface {
	Observer
	WantsDeletions() bool
}

// A PrefixObserver is an Observer that may be told of a write of very many
// counters by what their names share instead of by each change: a store
// that commits an import of a million lines at once tells it the names'
// longest common prefix after the commit (CommittedUnder), and need not
// keep a million changes until then. It is told of other writes change
// by change, as any Observer.
type PrefixObserver interface {
	Observer
	CommittedUnder(ctx context.Context, prefix string)
}

// CommonPrefix is the longest common prefix of p (the prefix of the names
// so far, when seen) and name, cut back to whole UTF-8 characters.
func CommonPrefix(p, name string, seen bool) string {
	if !seen {
		return name
	}
	n := 0
	for n < len(p) && n < len(name) && p[n] == name[n] {
		n++
	}
	for n > 0 && n < len(p) && !utf8.RuneStart(p[n]) {
		n--
	}
	return p[:n]
}

// Wanted returns the changes for which wants is true: changes itself when
// it wants them all, so that the common case does not allocate.
func Wanted(changes []Change, wants func(name string) bool) []Change {
	for i, c := range changes {
		if wants(c.Name) {
			continue
		}
		out := slices.Clip(changes[:i])
		for _, c := range changes[i+1:] {
			if wants(c.Name) {
				out = append(out, c)
			}
		}
		return out
	}
	return changes
}

// AnyDeleted reports whether changes hold a deletion (which a
// DeletionObserver is told of whether it Wants the counter or not).
func AnyDeleted(changes []Change) bool {
	return slices.ContainsFunc(changes, func(c Change) bool { return c.Deleted })
}
