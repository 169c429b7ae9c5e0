package cache_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/metrictest"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
)

// quietTimeout is the Redis deadline of a stack whose test passes none:
// one that hangs no Redis, for which a Redis call that times out is not a
// fault but a loaded machine (the service's 100 ms, cache.DefaultTimeout,
// failed such tests at load 11 with the tests run one at a time). A test
// that hangs Redis (Freeze, pauseWrites) or kills it passes
// cache.DefaultTimeout, the deadline whose bounds it proves.
const quietTimeout = 2 * time.Second

// stack is the cache over the real MySQL store, on a private Redis.
type stack struct {
	redis *testenv.Redis
	raw   *redis.Client // the test's own connection: pauses Redis, looks at keys
	mysql *countingStore
	cache *cache.Store
	svc   counters.Service
	reg   *prometheus.Registry
	db    *storage.DB // the database itself, for changes behind the store's back
}

func newStack(t *testing.T, o cache.Options) *stack {
	t.Helper()
	store, db := storetest.OpenStore(t, storetest.MigratedDSN(t))
	st := &stack{redis: testenv.StartRedis(t), mysql: &countingStore{Store: store}, reg: prometheus.NewRegistry(), db: db}
	if o.Timeout == 0 {
		o.Timeout = quietTimeout
	}
	o.Registerer = st.reg
	rdb, err := cache.NewClient(st.redis.URL(), o.Timeout)
	if err != nil {
		t.Fatal(err)
	}
	st.cache = cache.New(counters.Backend{Store: st.mysql, Once: store, Imports: store, Observe: store.Observe}, rdb, o)
	st.svc = counters.NewService(st.cache.Backend())
	st.raw = redis.NewClient(&redis.Options{Addr: st.redis.Addr(), MaxRetries: -1})
	t.Cleanup(func() { st.cache.Close(); rdb.Close(); st.raw.Close() })
	return st
}

// metric sums the samples of the named metric whose labels include every
// "label=value" given.
func (st *stack) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	return metrictest.Sum(t, st.reg, name, labels...)
}

// pauseWrites makes Redis hold every write (scripts included) for d while
// it still answers reads.
func (st *stack) pauseWrites(t *testing.T, d time.Duration) {
	t.Helper()
	if err := st.raw.Do(context.Background(), "CLIENT", "PAUSE", d.Milliseconds(), "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
}

func (st *stack) unpause(t *testing.T) {
	t.Helper()
	if err := st.raw.Do(context.Background(), "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatal(err)
	}
}

func (st *stack) get(t *testing.T, name string) *counters.Counter {
	t.Helper()
	c, err := st.svc.Get(context.Background(), name)
	if err != nil {
		t.Fatalf("Get(%q): %v", name, err)
	}
	return c
}

func (st *stack) increment(t *testing.T, name string, by int64) int64 {
	t.Helper()
	v, err := st.svc.Increment(context.Background(), name, by)
	if err != nil {
		t.Fatalf("Increment(%q): %v", name, err)
	}
	return v
}

// commandCalls is how many times Redis has run cmd (INFO commandstats).
func commandCalls(t *testing.T, st *stack, cmd string) int64 {
	t.Helper()
	info, err := st.raw.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			n, _, _ := strings.Cut(rest, ",")
			v, err := strconv.ParseInt(n, 10, 64)
			if err != nil {
				t.Fatalf("commandstats line %q: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// countingStore is the real MySQL store with two test hooks: it counts the
// reads that reach MySQL, and it can hold a read after MySQL answered, to
// play a slow reader whose answer arrives late.
type countingStore struct {
	counters.Store
	// failIncrement, when set, makes Increment run it instead and answer
	// that the database could not tell whether it committed.
	failIncrement func(ctx context.Context, name string, by int64)
	gets          atomic.Int64
	inflight      atomic.Int64
	getGate       gate
	listGate      gate
}

// IncrementMany passes through to MySQL, so that the cache in front can
// offer it too.
func (s *countingStore) IncrementMany(ctx context.Context, deltas []counters.Increment) ([]int64, error) {
	return s.Store.IncrementMany(ctx, deltas)
}

func (s *countingStore) Increment(ctx context.Context, name string, by int64) (int64, error) {
	if s.failIncrement != nil {
		s.failIncrement(ctx, name, by)
		return 0, counters.Errorf(counters.EUNAVAILABLE, "The database could not be reached; the change may or may not have been applied.")
	}
	return s.Store.Increment(ctx, name, by)
}

func (s *countingStore) Get(ctx context.Context, name string) (*counters.Counter, error) {
	s.gets.Add(1)
	s.inflight.Add(1)
	defer s.inflight.Add(-1)
	c, err := s.Store.Get(ctx, name)
	s.getGate.pass()
	return c, err
}

func (s *countingStore) List(ctx context.Context, f counters.ListFilter) (*counters.Page, error) {
	p, err := s.Store.List(ctx, f)
	s.listGate.pass()
	return p, err
}

// holdNextGet makes the next Get wait once it has read MySQL. held is
// closed when it waits; release lets it return what it read.
func (s *countingStore) holdNextGet() (held <-chan struct{}, release func()) { return s.getGate.arm() }

// holdNextList is holdNextGet for List.
func (s *countingStore) holdNextList() (held <-chan struct{}, release func()) {
	return s.listGate.arm()
}

// gate holds the next caller of pass once armed.
type gate struct {
	mu   sync.Mutex
	hold chan struct{}
	held chan struct{}
}

func (g *gate) arm() (<-chan struct{}, func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.hold, g.held = make(chan struct{}), make(chan struct{})
	hold := g.hold
	return g.held, func() { close(hold) }
}

func (g *gate) pass() {
	g.mu.Lock()
	hold, held := g.hold, g.held
	g.hold, g.held = nil, nil
	g.mu.Unlock()
	if hold != nil {
		close(held)
		<-hold
	}
}

// readAsync runs Get in a goroutine; the result arrives on the channel.
func readAsync(svc counters.Service, name string) <-chan result {
	ch := make(chan result, 1)
	go func() {
		c, err := svc.Get(context.Background(), name)
		ch <- result{c, err}
	}()
	return ch
}

type result struct {
	c   *counters.Counter
	err error
}

func (r result) value(t *testing.T) int64 {
	t.Helper()
	if r.err != nil {
		t.Fatalf("Get: %v", r.err)
	}
	return r.c.Value
}
