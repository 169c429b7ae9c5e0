package counters

import (
	"context"
	"iter"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxNameLen is the longest counter name, in bytes.
const MaxNameLen = 255

// ReservedPrefix starts the names kept for the service's own consumers (board
// ticket sequences). They are readable through HTTP but not writable.
const ReservedPrefix = "_"

// Counter is a named signed 64-bit counter.
type Counter struct {
	Name      string
	Value     int64
	Min       *int64 // nil: unbounded below
	Max       *int64 // nil: unbounded above
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ValidateName returns EINVALID unless name is 1 to 255 bytes of valid UTF-8
// without control characters.
func ValidateName(name string) error {
	switch {
	case name == "":
		return Errorf(EINVALID, "Counter name must not be empty.")
	case len(name) > MaxNameLen:
		return Errorf(EINVALID, "Counter name is %d bytes long; at most %d are allowed.", len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return Errorf(EINVALID, "Counter name must be valid UTF-8.")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return Errorf(EINVALID, "Counter name must not contain control characters.")
		}
	}
	return nil
}

// Add returns value+by and whether it fits in an int64: a counter never
// wraps around.
func Add(value, by int64) (int64, bool) {
	sum := value + by
	if (by > 0 && sum < value) || (by < 0 && sum > value) {
		return 0, false
	}
	return sum, true
}

// CheckBounds returns EINVALID when the counter's min is above its max, and
// EOUTOFRANGE when its value lies outside them.
func (c *Counter) CheckBounds() error {
	if c.Min != nil && c.Max != nil && *c.Min > *c.Max {
		return Errorf(EINVALID, "min (%d) must not be greater than max (%d).", *c.Min, *c.Max)
	}
	if c.Min != nil && c.Value < *c.Min {
		return Errorf(EOUTOFRANGE, "Value %d is below the counter's min %d.", c.Value, *c.Min)
	}
	if c.Max != nil && c.Value > *c.Max {
		return Errorf(EOUTOFRANGE, "Value %d is above the counter's max %d.", c.Value, *c.Max)
	}
	return nil
}

// IsReserved reports whether name belongs to the service's own consumers.
func IsReserved(name string) bool { return strings.HasPrefix(name, ReservedPrefix) }

// Bound is an optional change to a counter's min or max: Keep leaves the
// stored bound alone, otherwise Value (nil = unbounded) replaces it.
type Bound struct {
	Keep  bool
	Value *int64
}

// SetRequest sets a counter's value and optionally its bounds.
type SetRequest struct {
	Name       string
	Value      int64
	Min, Max   Bound
	CreateOnly bool // fail with ECONFLICT when the counter exists
}

// ListFilter selects a page of counters in byte order of their names.
type ListFilter struct {
	Prefix string
	After  string
	Limit  int
	// Fresh reads past every cache: the page holds every write answered
	// before the read began. An export needs it; a listing may lag by the
	// list TTL and be served from the cache.
	Fresh bool
	// HideReserved leaves the reserved names out of the selection itself
	// (a key that lists everything through the "" prefix never sees them):
	// the page is full while visible names follow, and NextAfter is never
	// a reserved name. Dropping them from a page already read would leave
	// pages short or empty and NextAfter naming a hidden counter.
	HideReserved bool
}

// Limits of ListFilter.Limit.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// DefaultListTTL is how long a listing may lag the writes by default:
// none. A listing is read from MySQL and shows every write answered before
// it began, as a read of one counter does. An operator may let lists lag
// (COUNTERS_LIST_TTL) to spare MySQL: the read cache then keeps a page
// that long, and HTTP lets clients keep it as long.
const DefaultListTTL = 0

// Page is one page of a listing; NextAfter is nil on the last page.
type Page struct {
	Counters  []Counter
	NextAfter *string
}

// ResetRequest sets every counter whose name starts with Prefix, or every
// counter when All is set, to Value. Reserved names are never touched.
type ResetRequest struct {
	Prefix string
	All    bool
	Value  int64
}

// Service is the counters domain as its clients see it: the HTTP layer, the
// ticket numbering and any other Go consumer. Methods return *Error values.
type Service interface {
	// Increment adds by (which may be negative or 0) to the counter, creating
	// it at 0 first, and returns the value this increment produced, as if
	// concurrent increments had run one after another. The step also counts
	// in the counter's history, in the same transaction (see HistoryGrain).
	// Returns EINVALID for a
	// bad name, EOUTOFRANGE when the result would leave int64 or the counter's
	// bounds (nothing changes), EUNAVAILABLE when MySQL cannot be reached.
	Increment(ctx context.Context, name string, by int64) (int64, error)

	// IncrementWith is Increment with what else the step counts (see
	// Extra), and IncrementWithOnce IncrementOnce with it. Batch items
	// carry their own (Increment.Extra).
	IncrementWith(ctx context.Context, name string, by int64, extra Extra) (int64, error)
	IncrementWithOnce(ctx context.Context, key Idempotency, name string, by int64, extra Extra) (value int64, replayed bool, err error)

	// Get returns the counter. Returns ENOTFOUND if it does not exist.
	Get(ctx context.Context, name string) (*Counter, error)

	// Set sets the counter's value (and bounds) and reports whether it was
	// created. Returns ECONFLICT for CreateOnly on an existing counter,
	// EOUTOFRANGE if the value is outside the bounds, EINVALID if min > max.
	Set(ctx context.Context, req SetRequest) (c *Counter, created bool, err error)

	// Delete removes the counter. Returns ENOTFOUND if it does not exist.
	Delete(ctx context.Context, name string) error

	// List returns a page of counters ordered by name.
	List(ctx context.Context, f ListFilter) (*Page, error)

	// Reset sets many counters at once and returns how many it set. Returns
	// EOUTOFRANGE, changing nothing, when the value breaks a matched
	// counter's bounds.
	Reset(ctx context.Context, req ResetRequest) (int64, error)

	// Batch applies the increments in one transaction, in order (a name may
	// appear more than once; each item sees the previous ones), all or
	// nothing, and returns the value each produced. Returns EINVALID for a
	// bad batch, EOUTOFRANGE when an item would leave int64 or its bounds;
	// an item's error names it (see ItemError).
	Batch(ctx context.Context, items []Increment) ([]int64, error)

	// IncrementOnce, SetOnce and BatchOnce are Increment, Set and Batch
	// under an idempotency key: the result is recorded with the key in the
	// change's transaction, and a repeat of the request gets the recorded
	// result with replayed set. See idempotency.go for the rules; they also
	// return EINVALID for a bad key and ECONFLICT for a key reused with
	// another request.
	IncrementOnce(ctx context.Context, key Idempotency, name string, by int64) (value int64, replayed bool, err error)
	SetOnce(ctx context.Context, key Idempotency, req SetRequest) (c *Counter, created, replayed bool, err error)
	BatchOnce(ctx context.Context, key Idempotency, items []Increment) (values []int64, replayed bool, err error)

	// Import applies lines as opts say (see import.go) and reports what it
	// did; refused lines are counted and named, not errors. It reads the
	// lines as they come and holds a chunk of them at a time. Without
	// Atomic each chunk commits on its own: on an error the report (never
	// nil) counts what was committed. Returns EINVALID for bad options, the
	// report's Err for an atomic import that refused a line,
	// EUNAVAILABLE when MySQL cannot be reached, and with a key what the
	// Once methods return.
	Import(ctx context.Context, opts ImportOptions, lines iter.Seq[ImportLine]) (*ImportReport, error)
}

// Store is what every persistence backend must do: storage/ implements it
// against MySQL, and cache/ and coalesce/ wrap it. Arguments are already
// validated. Idempotent writes and imports have small interfaces of their
// own (OnceStore in idempotency.go, Importer in import.go), so that a
// wrapper implements only what it changes and a new backend pays only for
// what it offers. Methods return what the Service's methods of the same
// name return.
type Store interface {
	Increment(ctx context.Context, name string, by int64) (int64, error)
	Get(ctx context.Context, name string) (*Counter, error)
	Set(ctx context.Context, req SetRequest) (c *Counter, created bool, err error)
	Delete(ctx context.Context, name string) error
	List(ctx context.Context, f ListFilter) (*Page, error)
	Reset(ctx context.Context, req ResetRequest) (int64, error)
	Batch(ctx context.Context, items []Increment) ([]int64, error)

	// IncrementMany applies the increments of distinct counters in one
	// transaction (one commit) and returns each counter's new value, in
	// order. All or nothing: an overflow or a bound fails the whole call
	// with EOUTOFRANGE and changes nothing. Unlike Batch, the names are
	// distinct and no error names an item: it is the coalescer's, which
	// finds out on its own which counter refused. It is also the way of an
	// increment with an Extra (Service.IncrementWith): one Increment
	// carrying it, which the coalescer queues as it queues Increment.
	IncrementMany(ctx context.Context, incs []Increment) ([]int64, error)
}

// Backend is what NewService builds on: the store, and the stores of the
// rules that have their own. A nil Once or Imports makes those methods of
// the Service fail with EINTERNAL. Observe registers observers of every
// change the backend commits (see Observer); nil where it takes none.
type Backend struct {
	Store   Store
	Once    OnceStore
	Imports Importer
	Observe func(...Observer)
}

// BackendOf is the backend that store makes on its own: its Once, Imports
// and Observe are store's own where it has them.
func BackendOf(store Store) Backend {
	b := Backend{Store: store}
	b.Once, _ = store.(OnceStore)
	b.Imports, _ = store.(Importer)
	if o, ok := store.(interface{ Observe(...Observer) }); ok {
		b.Observe = o.Observe
	}
	return b
}
