// Package visitors counts the distinct visitors of the page-hit counters per
// UTC day, without keeping who they are. A visitor is the client's address
// and User-Agent under the day's salt (Keys); each counter's visitors of a
// day are a HyperLogLog sketch of those identifiers, which holds no
// identifier, only the longest run of zero bits seen per register.
//
// Sketches are united, never summed: a visitor seen twice, by two processes,
// on two pages of a prefix or before and after Redis was lost, counts once.
// Each process collects the visitors it sees in memory and unites them into
// the sketches in MySQL (the store of record) every flush interval, under a
// row lock; a read unites what MySQL holds with what this process has not
// written yet. Redis plays no part: a page hit's visitor costs it no round
// trip, and a flushed or restarted Redis loses none.
//
// It knows neither HTTP, SQL nor Redis: hits/ decides which page hits are
// visits, storage/ keeps salts and sketches.
package visitors

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/axiomhq/hyperloglog"

	"github.com/countersvc/countersvc/internal/deadline"
)

// Precision of the sketches: 2^16 registers, a standard error of 0.41%, so
// that an estimate from 1,000 visitors up is within 2% (about 5 standard
// errors) practically always. Up to about 65,000 visitors a day a sketch
// stays sparse (25-bit precision, near exact, a few bytes per visitor); past
// that it is 64 KiB of registers.
func newSketch() *hyperloglog.Sketch { return hyperloglog.New16() }

// Sketch is one counter's visitors on one UTC day, encoded.
type Sketch struct {
	Name string
	Day  time.Time // midnight UTC
	Data []byte
}

// Store keeps the salts and the sketches.
type Store interface {
	Salts
	// MergeSketches unites each of sketches into the stored sketch of its
	// counter and day with merge, atomically per sketch; a counter that
	// does not exist (deleted since) gets none.
	MergeSketches(ctx context.Context, sketches []Sketch, merge func(stored, add []byte) ([]byte, error)) error
	// Sketches returns the stored sketches of the counter name or, when
	// name is empty, of every counter under prefix, of the UTC days in
	// [from, to).
	Sketches(ctx context.Context, name, prefix string, from, to time.Time) ([]Sketch, error)
	// PurgeSalts destroys the salts of the days before before.
	PurgeSalts(ctx context.Context, before time.Time) (int64, error)
}

// Options tune New.
type Options struct {
	Keys  *Keys            // default: keys under store's salts, on Now
	Now   func() time.Time // the clock of days; default time.Now
	Flush time.Duration    // how often Run writes the sketches; default DefaultFlush
	Log   *slog.Logger     // default: discard
}

// DefaultFlush is how often sketches are written to MySQL: what a crash
// may lose, and how late one process sees another's visitors.
const DefaultFlush = 5 * time.Second

// saltGrace keeps a day's salt an hour into the next day, for a process
// whose clock lags; then it is destroyed, at most 25 hours after it was
// drawn.
const saltGrace = time.Hour

// Counter counts visitors.
type Counter struct {
	Keys  *Keys
	store Store
	o     Options

	mu      sync.Mutex
	pending map[dayName]*hyperloglog.Sketch // not yet in MySQL

	purged time.Time // the last day whose earlier salts Run destroyed
}

type dayName struct {
	day  int64 // UTC days since 1970
	name string
}

// New returns the visitor counter over store.
func New(store Store, o Options) *Counter {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Flush <= 0 {
		o.Flush = DefaultFlush
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Keys == nil {
		o.Keys = NewKeys(store, o.Now)
	}
	return &Counter{Keys: o.Keys, store: store, o: o, pending: map[dayName]*hyperloglog.Sketch{}}
}

// Mark counts the visitor id, an identifier of the UTC day (see
// DayKey.Day), on the counter name. name must be the caller's own memory
// (it is kept). It never waits for I/O.
func (c *Counter) Mark(name string, day int64, id ID) {
	k := dayName{day: day, name: name}
	x := binary.LittleEndian.Uint64(id[:8]) // an HMAC: uniform already
	c.mu.Lock()
	sk := c.pending[k]
	if sk == nil {
		sk = newSketch()
		c.pending[k] = sk
	}
	sk.InsertHash(x)
	c.mu.Unlock()
}

// Flush unites the visitors marked so far into MySQL. What could not be
// written stays pending for the next flush, all of it: uniting a sketch
// twice changes nothing, so a flush cut short may safely write again what
// it had written.
func (c *Counter) Flush(ctx context.Context) error {
	c.mu.Lock()
	pending := c.pending
	c.pending = map[dayName]*hyperloglog.Sketch{}
	c.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	err := c.write(ctx, pending)
	if err != nil {
		c.mu.Lock()
		for k, sk := range pending {
			if later := c.pending[k]; later != nil {
				sk.Merge(later) // same precision: cannot fail
			}
			c.pending[k] = sk
		}
		c.mu.Unlock()
	}
	return err
}

func (c *Counter) write(ctx context.Context, pending map[dayName]*hyperloglog.Sketch) error {
	out := make([]Sketch, 0, len(pending))
	for k, sk := range pending {
		data, err := sk.MarshalBinary()
		if err != nil {
			return err
		}
		out = append(out, Sketch{Name: k.name, Day: dayTime(k.day), Data: data})
	}
	return c.store.MergeSketches(ctx, out, merge)
}

// merge unites two encoded sketches.
func merge(stored, add []byte) ([]byte, error) {
	a, err := decode(stored)
	if err != nil {
		return nil, err
	}
	b, err := decode(add)
	if err != nil {
		return nil, err
	}
	if err := a.Merge(b); err != nil {
		return nil, err
	}
	return a.MarshalBinary()
}

func decode(data []byte) (*hyperloglog.Sketch, error) {
	sk := newSketch()
	if len(data) == 0 {
		return sk, nil
	}
	if err := sk.UnmarshalBinary(data); err != nil {
		return nil, fmt.Errorf("visitors: a stored sketch does not decode: %w", err)
	}
	return sk, nil
}

// Run flushes every flush interval and destroys the salts of past days,
// until ctx ends; then it flushes once more, so that a graceful shutdown
// loses no visitor. A failed round is logged and retried on the next.
func (c *Counter) Run(ctx context.Context) {
	deadline.Every(ctx, c.o.Flush, func(ctx context.Context) {
		if err := c.Flush(ctx); err != nil {
			c.o.Log.Warn("writing visitor sketches", "error", err.Error())
		}
		c.purgeSalts(ctx)
	})
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.o.Flush)
	defer cancel()
	if err := c.Flush(fctx); err != nil {
		c.o.Log.Warn("writing visitor sketches at shutdown", "error", err.Error())
	}
}

// purgeSalts destroys the salts of the days before the current one (an
// hour late, see saltGrace), once a day per process.
func (c *Counter) purgeSalts(ctx context.Context) {
	day := c.o.Now().Add(-saltGrace).UTC().Truncate(24 * time.Hour)
	if day.Equal(c.purged) {
		return
	}
	if _, err := c.store.PurgeSalts(ctx, day); err != nil {
		c.o.Log.Warn("destroying past salts", "error", err.Error())
		return
	}
	c.purged = day
}

// Days returns the visitors of the counter name or, when name is empty,
// of the union of every counter under prefix, on each UTC day in
// [from, to) (midnights UTC), keyed by the day's midnight; days without
// visitors are left out.
func (c *Counter) Days(ctx context.Context, name, prefix string, from, to time.Time) (map[time.Time]int64, error) {
	stored, err := c.store.Sketches(ctx, name, prefix, from, to)
	if err != nil {
		return nil, err
	}
	union := map[int64]*hyperloglog.Sketch{}
	add := func(day int64, sk *hyperloglog.Sketch) error {
		if u := union[day]; u != nil {
			return u.Merge(sk)
		}
		union[day] = sk
		return nil
	}
	for _, s := range stored {
		sk, err := decode(s.Data)
		if err != nil {
			return nil, err
		}
		if err := add(s.Day.Unix()/(24*60*60), sk); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	for k, sk := range c.pending {
		at := dayTime(k.day)
		if at.Before(from) || !at.Before(to) || (name != "" && k.name != name) || (name == "" && !strings.HasPrefix(k.name, prefix)) {
			continue
		}
		if err := add(k.day, sk.Clone()); err != nil {
			c.mu.Unlock()
			return nil, err
		}
	}
	c.mu.Unlock()
	out := make(map[time.Time]int64, len(union))
	for day, sk := range union {
		out[dayTime(day)] = int64(sk.Estimate())
	}
	return out, nil
}

func dayTime(day int64) time.Time { return time.Unix(day*24*60*60, 0).UTC() }
