package cache

import (
	"context"
	"iter"
	"strconv"
	"time"

	"countersvc/counters"
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
// in Backend's holdWrites, above the coalescer). A confirmed
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

// Backend is what the service is built on: the cache, then Options.Between
// (the coalescer), then the lease wait (holdWrites), in the one order that
// is right. The wait is not in the Store's own write methods because the
// coalescer sends a counter's writes through them one round at a time: a
// round that waited there would hold up the next, and an increment queued
// behind it would wait two leases. Above the coalescer each request waits
// once, beside the others. A write whose own invalidation failed always
// sees the count move, and one that merely overlapped another's failure
// waits too, which costs only time. The wrappers below implement their
// interfaces in full, without embedding them: a write method added to an
// interface fails to compile here until it waits too.
func (s *Store) Backend() counters.Backend {
	var store counters.Store = s
	if s.o.Between != nil {
		store = s.o.Between(store)
	}
	return counters.Backend{Store: holdWrites{store, s}, Once: holdOnce{s, s}, Imports: holdImports{s, s}}
}

// after is deferred by each write with the count of unconfirmed
// invalidations taken as the write began.
func (s *Store) after(before uint64) {
	if s.unconfirmed.Load() != before {
		s.outliveLease(time.Now(), opWrite) // now: MySQL has answered the write
	}
}

type holdWrites struct {
	next counters.Store
	s    *Store
}

func (h holdWrites) Get(ctx context.Context, name string) (*counters.Counter, error) {
	return h.next.Get(ctx, name)
}

func (h holdWrites) List(ctx context.Context, f counters.ListFilter) (*counters.Page, error) {
	return h.next.List(ctx, f)
}

func (h holdWrites) Increment(ctx context.Context, name string, by int64) (int64, error) {
	defer h.s.after(h.s.unconfirmed.Load())
	return h.next.Increment(ctx, name, by)
}

func (h holdWrites) Set(ctx context.Context, req counters.SetRequest) (*counters.Counter, bool, error) {
	defer h.s.after(h.s.unconfirmed.Load())
	return h.next.Set(ctx, req)
}

func (h holdWrites) Delete(ctx context.Context, name string) error {
	defer h.s.after(h.s.unconfirmed.Load())
	return h.next.Delete(ctx, name)
}

func (h holdWrites) Reset(ctx context.Context, req counters.ResetRequest) (int64, error) {
	defer h.s.after(h.s.unconfirmed.Load())
	return h.next.Reset(ctx, req)
}

func (h holdWrites) Batch(ctx context.Context, items []counters.Increment) ([]int64, error) {
	defer h.s.after(h.s.unconfirmed.Load())
	return h.next.Batch(ctx, items)
}

func (h holdWrites) IncrementMany(ctx context.Context, incs []counters.Increment) ([]int64, error) {
	defer h.s.after(h.s.unconfirmed.Load())
	return h.next.IncrementMany(ctx, incs)
}

type holdOnce struct {
	next counters.OnceStore
	s    *Store
}

func (h holdOnce) IncrementOnce(ctx context.Context, key counters.Idempotency, name string, by int64) (int64, bool, error) {
	defer h.s.after(h.s.unconfirmed.Load())
	return h.next.IncrementOnce(ctx, key, name, by)
}

func (h holdOnce) SetOnce(ctx context.Context, key counters.Idempotency, req counters.SetRequest) (*counters.Counter, bool, bool, error) {
	defer h.s.after(h.s.unconfirmed.Load())
	return h.next.SetOnce(ctx, key, req)
}

func (h holdOnce) BatchOnce(ctx context.Context, key counters.Idempotency, items []counters.Increment) ([]int64, bool, error) {
	defer h.s.after(h.s.unconfirmed.Load())
	return h.next.BatchOnce(ctx, key, items)
}

type holdImports struct {
	next counters.Importer
	s    *Store
}

func (h holdImports) Import(ctx context.Context, opts counters.ImportOptions, lines iter.Seq[counters.ImportLine]) (*counters.ImportReport, error) {
	defer h.s.after(h.s.unconfirmed.Load())
	return h.next.Import(ctx, opts, lines)
}
