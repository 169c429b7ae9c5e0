package cache

import (
	"context"
	"iter"
	"strconv"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// DefaultLease is how long a counter entry is trusted after the MySQL read
// that filled it began. It trades the hit ratio of counters read a few
// times a second against how long a write (or a read from MySQL) waits
// while Redis cannot confirm: GET of 1,000 counters at 64 connections
// measured 4,037/s with 59% from the cache at 250ms, 8,035/s and 88% at 1s,
// 17,195/s and 99% at 5s (scripts/bench -scenario lease), and a Redis fault
// costs each write about the lease. 1s halves the miss cost of 250ms and
// keeps a Redis hiccup at about a second; 5s would make it five.
const DefaultLease = time.Second

// The lease. A value in Redis was read from MySQL by a read that began at
// some instant r, and its entry expires at r + Lease (PEXPIREAT, an
// absolute time: a fill that Redis runs late, after a pause or a SIGSTOP,
// still expires on time, or at once). A write that MySQL answered at c
// committed before c, so every entry that may hold a value older than the
// write was read before c and expires before c + Lease. A write whose
// invalidation Redis did not confirm is therefore answered only after
// c + Lease + ClockSkew (the skew covers Redis judging expiry by its own
// clock): by then no process can find an entry older than it, whether the
// invalidation ran late, was lost, or never left this process (the wait is
// in the Backend's wrapper, above the coalescer). A confirmed
// invalidation needs no wait: it replaced the entry's generation, so that
// fills prepared before the write are refused (fillScript).

// expireAt is the PEXPIREAT argument of an entry filled by a MySQL read
// that began at readAt.
func (s *Store) expireAt(readAt time.Time) string {
	return strconv.FormatInt(readAt.Add(s.o.Lease).UnixMilli(), 10)
}

// leaseMillis is the PEXPIRE argument of an entry that holds a generation
// and no value: a reservation, or what an invalidation leaves.
func (s *Store) leaseMillis() string { return strconv.FormatInt(s.o.Lease.Milliseconds(), 10) }

// outliveLease holds back an answer until every entry that may hold a value
// from before since has expired: for a write whose invalidation Redis did
// not confirm, since is when MySQL answered it; for a read that answers from
// MySQL what it could not store in Redis, when its read began (see settle).
func (s *Store) outliveLease(since time.Time, op string) {
	s.m.leaseWaits.WithLabelValues(op).Inc()
	time.Sleep(time.Until(since.Add(s.o.Lease + s.o.ClockSkew)))
}

// Operations that wait out the lease, a label of counters_cache_lease_waits_total.
const (
	opWrite = "write"
	opRead  = "read"
)

// Backend is what the service is built on: one wrapper, whose reads come
// from the cache and whose writes go to the store below through
// Options.Between (the coalescer) and wait out the lease when an
// invalidation was not confirmed meanwhile. A request enters the cache
// once. The entries are dropped by the cache's observer of the change seam
// (see invalidator), which the store below calls after each commit, once a
// round; a write that fails, which may still have committed, drops them
// here. The wait is here and not in the observer because the coalescer
// runs a counter's writes one round at a time: a round that waited would
// hold up the next, and an increment queued behind it would wait two
// leases. Here each request waits once, beside the others. A write whose
// own invalidation failed always sees the count move, and one that merely
// overlapped another's failure waits too, which costs only time. The
// wrappers below implement their interfaces in full, without embedding
// them: a write method added to an interface fails to compile here until
// it waits too. New registered the observer; without Observe below it
// could not, and Backend panics.
func (s *Store) Backend() counters.Backend {
	if s.next.Observe == nil {
		panic("cache: the store below takes no observers, so no write could drop its entries")
	}
	writes := s.next.Store
	if s.o.Between != nil {
		writes = s.o.Between(writes)
	}
	return counters.Backend{Store: cached{writes, s}, Once: cachedOnce{s.next.Once, s}, Imports: cachedImports{s.next.Imports, s},
		Observe: s.next.Observe}
}

// after is deferred by each write with the count of unconfirmed
// invalidations taken as the write began.
func (s *Store) after(before uint64) {
	if s.unconfirmed.Load() != before {
		s.outliveLease(time.Now(), opWrite) // now: MySQL has answered the write
	}
}

// cached is the service's store: reads from the cache, writes to writes.
type cached struct {
	writes counters.Store
	s      *Store
}

func (c cached) Get(ctx context.Context, name string) (*counters.Counter, error) {
	return c.s.Get(ctx, name)
}

func (c cached) List(ctx context.Context, f counters.ListFilter) (*counters.Page, error) {
	return c.s.List(ctx, f)
}

func (c cached) Increment(ctx context.Context, name string, by int64) (int64, error) {
	defer c.s.after(c.s.unconfirmed.Load())
	v, err := c.writes.Increment(ctx, name, by)
	c.s.unsure(ctx, err, name)
	return v, err
}

func (c cached) Set(ctx context.Context, req counters.SetRequest) (*counters.Counter, bool, error) {
	defer c.s.after(c.s.unconfirmed.Load())
	cn, created, err := c.writes.Set(ctx, req)
	c.s.unsure(ctx, err, req.Name)
	return cn, created, err
}

func (c cached) Delete(ctx context.Context, name string) error {
	defer c.s.after(c.s.unconfirmed.Load())
	err := c.writes.Delete(ctx, name)
	c.s.unsure(ctx, err, name)
	return err
}

func (c cached) Reset(ctx context.Context, req counters.ResetRequest) (int64, error) {
	defer c.s.after(c.s.unconfirmed.Load())
	n, err := c.writes.Reset(ctx, req)
	if err != nil {
		prefix := req.Prefix
		if req.All {
			prefix = ""
		}
		c.s.invalidatePrefix(ctx, prefix)
	}
	return n, err
}

func (c cached) Batch(ctx context.Context, items []counters.Increment) ([]int64, error) {
	defer c.s.after(c.s.unconfirmed.Load())
	values, err := c.writes.Batch(ctx, items)
	c.s.unsure(ctx, err, names(items)...)
	return values, err
}

func (c cached) IncrementMany(ctx context.Context, incs []counters.Increment) ([]int64, error) {
	defer c.s.after(c.s.unconfirmed.Load())
	values, err := c.writes.IncrementMany(ctx, incs)
	c.s.unsure(ctx, err, names(incs)...)
	return values, err
}

type cachedOnce struct {
	next counters.OnceStore
	s    *Store
}

func (c cachedOnce) IncrementOnce(ctx context.Context, key counters.Idempotency, name string, by int64) (int64, bool, error) {
	defer c.s.after(c.s.unconfirmed.Load())
	v, replayed, err := c.next.IncrementOnce(ctx, key, name, by)
	c.s.unsure(ctx, err, name)
	return v, replayed, err
}

func (c cachedOnce) SetOnce(ctx context.Context, key counters.Idempotency, req counters.SetRequest) (*counters.Counter, bool, bool, error) {
	defer c.s.after(c.s.unconfirmed.Load())
	cn, created, replayed, err := c.next.SetOnce(ctx, key, req)
	c.s.unsure(ctx, err, req.Name)
	return cn, created, replayed, err
}

func (c cachedOnce) BatchOnce(ctx context.Context, key counters.Idempotency, items []counters.Increment) ([]int64, bool, error) {
	defer c.s.after(c.s.unconfirmed.Load())
	values, replayed, err := c.next.BatchOnce(ctx, key, items)
	c.s.unsure(ctx, err, names(items)...)
	return values, replayed, err
}

type cachedImports struct {
	next counters.Importer
	s    *Store
}

// Import may change any counter its lines name, far too many to drop one
// by one when it fails and may still have committed: it then flushes
// every entry under the names' longest common prefix (all entries when
// they share none), as a failed reset does.
func (c cachedImports) Import(ctx context.Context, opts counters.ImportOptions, lines iter.Seq[counters.ImportLine]) (*counters.ImportReport, error) {
	defer c.s.after(c.s.unconfirmed.Load())
	var prefix string
	seen := false
	named := func(yield func(counters.ImportLine) bool) {
		for l := range lines {
			if l.Reason == "" && l.Err == nil {
				prefix, seen = counters.CommonPrefix(prefix, l.Counter.Name, seen), true
			}
			if !yield(l) {
				return
			}
		}
	}
	r, err := c.next.Import(ctx, opts, named)
	if err != nil && seen {
		c.s.invalidatePrefix(ctx, prefix)
	}
	return r, err
}

func names(items []counters.Increment) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Name
	}
	return out
}
