// Package live owns the rules of live updates (docs/live-updates.md, "What
// a stream sends"): which counters a process watches, what each
// stream is sent and when, the caps on open streams, and how a process
// learns of changes that other processes committed. It knows neither HTTP
// (app/ writes the events), Redis (cache/ carries the notices between
// processes, a Transport) nor SQL (storage/ reads the counters, a Reader).
//
// The one rule everything hangs on: what a stream sends is read from MySQL,
// never taken from a writer's report. A counter's row carries a version,
// its updated_at in microseconds, which every write moves strictly forward
// under the row's lock (storage's newerThanStored), so versions order one
// counter's states in commit order, across processes and restarts. A
// writer's own report cannot be trusted for that order: two writers of one
// process take their clock readings before their statements, commit in the
// other order, and tell their observers concurrently, so the later value
// may arrive first with the older stamp. So a committed change, local or
// heard from another process, only marks its counter dirty; one loop per
// process reads the dirty counters back from MySQL, in one query per round,
// and hands each stream the states whose version is newer than what it
// sent. Reads made one after the other by one loop see commit order, and a
// stream sends a state only when its version is higher than the last it
// sent: values never go back.
//
// Lost notices delay an update, never lose it: the same loop also reads
// every watched counter (and the counters under every watched prefix that
// changed lately) at a bounded interval, and at once after the Transport
// says it may have missed notices (a resubscription, a probe that did not
// come back). A deletion is the exception: a counter that is gone is found
// by no read unless its state was read before, which a prefix stream does
// not do for a counter that did not change while it was open. So every
// deletion is published, whether or not this process knows that another
// one watches it, and a notice that Redis failed to take is sent again;
// one lost after Redis took it (a subscriber that was reconnecting) stays
// lost.
package live

import (
	"context"
	"strconv"
	"time"
)

// Update is a counter's state as MySQL holds it, or its deletion.
type Update struct {
	Name  string
	Value int64
	// Version is the row's updated_at in microseconds since the epoch:
	// strictly increasing per counter in commit order. A deletion carries
	// the version of the last state plus one; a counter that does not
	// exist yet (a public page with no hit) has 0.
	Version int64
	Deleted bool
}

// At is when the state was committed (its updated_at), in UTC.
func (u Update) At() time.Time { return time.UnixMicro(u.Version).UTC() }

// ID is the update's event id: its version, in decimal.
func (u Update) ID() string { return strconv.FormatInt(u.Version, 10) }

// Query asks a Reader for counters: the named ones, present or not, and
// those under the prefixes updated after Since (a version).
type Query struct {
	Names    []string
	Prefixes []string
	Since    int64
}

// Reader reads counters' states from the store of record (storage/).
type Reader interface {
	// ReadLive returns the present counters that q matches, each once.
	// A named counter missing from the answer does not exist.
	ReadLive(ctx context.Context, q Query) ([]Update, error)
}

// Watch is what a process watches: counter names and prefixes.
type Watch struct {
	Names    []string
	Prefixes []string
}

// Transport carries notices between the processes of the service (cache/,
// over Redis pub/sub). Everything it carries is a hint: a lost notice costs
// a delay until the next check, so it may drop whatever it cannot send.
type Transport interface {
	// Publish tells the other processes that the named counters changed.
	Publish(ctx context.Context, names []string) error
	// Subscribe listens until ctx ends, calling l's functions from its
	// own goroutine.
	Subscribe(ctx context.Context, l Listener)
	// Share announces for ttl what this process watches, so that
	// publishers publish only for watched counters, and tells the others
	// at once (their Listener.Watching).
	Share(ctx context.Context, w Watch, ttl time.Duration) error
	// Watched is what all processes watch (each entry for its ttl).
	Watched(ctx context.Context) (Watch, error)
}

// Listener receives what a Transport hears.
type Listener struct {
	Changed  func(names []string) // another (or this) process changed these counters
	Missed   func()               // notices may have been lost: after every subscription, the first included
	Watching func()               // a process watches something new
}
