// Package cache is the service's use of Redis: it puts Redis in front of a
// counters.Store for the read views, and keeps the page-hit limits
// (hits.Limits; see NewHitLimits).
//
// Single counters are read-through with a TTL and invalidated after every
// write, once MySQL has answered; the guarantees are in README.md
// ("Caching"). Lists are cached for a short TTL and never invalidated: they
// may lag writes by up to that TTL.
//
// Redis is an optimisation only. Every Redis call, the limits' included, has
// a short deadline and goes through one circuit breaker (redisCalls); when
// Redis fails, reads come from MySQL, writes are not held up, and hits are
// counted without limits. An invalidation that cannot be confirmed makes this
// process distrust the entry (see distrust) until a background repairer has
// confirmed one.
package cache

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"countersvc/counters"
)

// Options tune the cache. Zero values take the defaults.
type Options struct {
	TTL      time.Duration // lifetime of a counter entry; default 60s
	ListTTL  time.Duration // how stale a cached page of a listing may be; default 1s
	Timeout  time.Duration // deadline of each Redis call, the hit limits' too; default DefaultTimeout
	Cooldown time.Duration // how long Redis is skipped after repeated failures; default 1s
	// MaxDistrusted bounds the names remembered as distrusted; past it the
	// whole cache is distrusted until it has been flushed. Default 10000.
	MaxDistrusted int
	KeyPrefix     string                // of every key, the hit limits' too; default "counters:v1:"
	Registerer    prometheus.Registerer // nil: metrics are not registered
	Log           *slog.Logger          // default: discard
}

func (o *Options) defaults() {
	if o.TTL <= 0 {
		o.TTL = 60 * time.Second
	}
	if o.ListTTL <= 0 {
		o.ListTTL = time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Cooldown <= 0 {
		o.Cooldown = time.Second
	}
	if o.MaxDistrusted <= 0 {
		o.MaxDistrusted = 10000
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = "counters:v1:"
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
}

// DefaultTimeout is the deadline of each Redis call: a hung Redis costs a
// request this much, not seconds.
const DefaultTimeout = 100 * time.Millisecond

// Store is a counters.Store that serves reads from Redis when it can.
type Store struct {
	next        counters.Store
	*redisCalls // client, deadline, circuit breaker and keys of every Redis call
	o           Options

	distrust *distrust
	tokens   *tokens
	flights  singleflight.Group
	reads    pipeline      // of entry reads
	seq      atomic.Uint64 // orders MySQL reads against request arrivals (see getFresh)
	m        *metrics

	wake     chan struct{} // nudges the repairer
	stop     chan struct{}
	stopOnce sync.Once
	done     chan struct{}
}

var _ counters.Store = (*Store)(nil)

// New returns the cache over next. rdb is not closed by Close: its owner
// closes it after the Store. rdb must have ContextTimeoutEnabled (NewClient
// sets it), or a call on a hung Redis waits out go-redis's own read timeout
// (seconds) instead of the deadline do gives it.
func New(next counters.Store, rdb redis.UniversalClient, o Options) *Store {
	o.defaults()
	s := &Store{
		next:     next,
		o:        o,
		distrust: newDistrust(o.MaxDistrusted),
		tokens:   newTokens(),
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	s.m = newMetrics(o.Registerer, s)
	s.redisCalls = newRedisCalls(rdb, o, s.m.errors)
	s.reads.calls, s.reads.op = s.redisCalls, "read"
	go s.repairLoop()
	return s
}

// Close stops the repairer after a last attempt to repair what this process
// distrusts, so that other processes are not left with stale entries.
func (s *Store) Close() error {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	return nil
}

// Check reports whether Redis answers, for /readyz.
func (s *Store) Check(ctx context.Context) error { return s.ping(ctx) }

// changeCtx is the context for the cache work after a write: the write has
// committed, so its invalidation must not be cut short because the client's
// request is ending.
func changeCtx(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
