// Package cache is the service's use of Redis: it puts Redis in front of a
// counters.Store for the read views, and keeps the page-hit limits
// (hits.Limits; see NewHitLimits).
//
// Single counters are read-through and invalidated after every write, once
// MySQL has answered; the guarantees are in README.md ("Caching"). Lists are
// cached for a short TTL and never invalidated: they may lag writes by up to
// that TTL.
//
// A counter's entry is trusted as a lease: it expires (PEXPIREAT) at the
// instant the MySQL read that filled it began, plus Options.Lease. So no
// entry can hold a value older than Lease, in any process, whatever Redis
// does with late commands. A write whose invalidation Redis confirmed is
// answered at once; one whose invalidation Redis did not confirm is
// answered only when every entry that may predate it has expired: Lease
// (plus Options.ClockSkew) after MySQL answered it: the writes go through
// the Backend's one wrapper, which waits. See lease.go.
//
// Redis is an optimisation only. Every Redis call, the limits' included, has
// a short deadline and goes through one circuit breaker (redisCalls); when
// Redis fails, reads come from MySQL, writes wait out the lease, and hits
// are counted without limits.
package cache

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/countersvc/countersvc/counters"
)

// Options tune the cache. Zero values take the defaults.
type Options struct {
	Lease      time.Duration         // how long after its MySQL read began a counter entry is trusted; default DefaultLease
	ClockSkew  time.Duration         // how far the clocks of the service's hosts and Redis's may differ; default DefaultClockSkew
	ListTTL    time.Duration         // how stale a cached page of a listing may be; 0: lists are not cached, they show every answered write
	Timeout    time.Duration         // deadline of each Redis call, the hit limits' too; default DefaultTimeout
	Cooldown   time.Duration         // how long Redis is skipped after repeated failures; default 1s
	KeyPrefix  string                // of every key, the hit limits' too; default "counters:v1:"
	Registerer prometheus.Registerer // nil: metrics are not registered
	Log        *slog.Logger          // default: discard

	// Between, when set, wraps the store below on the writes' way to it,
	// under the lease wait (see Backend): the coalescer goes there, so that
	// one invalidation serves a whole round and a write that waits out the
	// lease holds up no round.
	Between func(counters.Store) counters.Store
}

func (o *Options) defaults() {
	if o.Lease <= 0 {
		o.Lease = DefaultLease
	}
	o.ClockSkew = max(o.ClockSkew, 0)
	o.ListTTL = max(o.ListTTL, 0)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Cooldown <= 0 {
		o.Cooldown = time.Second
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = "counters:v1:"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// DefaultClockSkew is what the service's configuration takes for how far
// the clocks of its hosts and of Redis differ; Options.ClockSkew 0 means 0.
const DefaultClockSkew = 50 * time.Millisecond

// DefaultTimeout is the deadline of each Redis call: a hung Redis costs a
// request this much, not seconds.
const DefaultTimeout = 100 * time.Millisecond

// Store is the cache: its Backend serves reads from Redis when it can.
type Store struct {
	next        counters.Backend
	*redisCalls // client, deadline, circuit breaker and keys of every Redis call
	o           Options

	tokens  *tokens
	flights singleflight.Group
	reads   *pipeline     // of entry reads
	seq     atomic.Uint64 // orders MySQL reads against request arrivals (see getFresh)
	// unconfirmed counts invalidations Redis did not confirm; a write that
	// sees it move waits out the lease (Backend, in lease.go).
	unconfirmed atomic.Uint64
	m           *metrics
	// arrivals are the page hits on their way from the limits to the
	// coalescer (see Starter).
	arrivals *arrivals
}

// New returns the cache over next, and registers with next.Observe the
// observer that drops the entries of what each write changed; the service
// is built on its Backend, which puts every write through the lease wait.
// next must have Once, Imports and Observe. rdb is not closed by Close: its owner
// closes it after the Store. rdb must have ContextTimeoutEnabled (NewClient
// sets it), or a call on a hung Redis waits out go-redis's own read timeout
// (seconds) instead of the deadline do gives it.
func New(next counters.Backend, rdb redis.UniversalClient, o Options) *Store {
	o.defaults()
	s := &Store{next: next, o: o, tokens: newTokens(), arrivals: &arrivals{}}
	s.m = newMetrics(o.Registerer, s)
	s.redisCalls = newRedisCalls(rdb, o, s.m.errors)
	s.reads = newPipeline(pipeline{calls: s.redisCalls, op: "read"})
	if next.Observe != nil {
		next.Observe(invalidator{s})
	}
	return s
}

// Close releases nothing today: the Store runs no background work (a write
// that Redis did not confirm waits out its lease before it is answered, so
// nothing is left to repair). It is kept for the owner's closing order.
func (s *Store) Close() error { return nil }

// Check reports whether Redis answers, for /readyz.
func (s *Store) Check(ctx context.Context) error { return s.ping(ctx) }

// changeCtx is the context for the cache work after a write: the write has
// committed, so its invalidation must not be cut short because the client's
// request is ending.
func changeCtx(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
