package coalesce_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/coalesce"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/storage"
)

func mustStore(tb testing.TB) *storage.CounterStore {
	tb.Helper()
	s, _ := storetest.OpenStore(tb, storetest.MigratedDSN(tb))
	return s
}

// gatedStore is the real store whose single-counter statements wait at a
// gate, so that a test can make increments queue behind one in flight.
type gatedStore struct {
	*storage.CounterStore
	gate    chan struct{}
	entered chan struct{}
	calls   atomic.Int64
}

func newGated(s *storage.CounterStore) *gatedStore {
	return &gatedStore{CounterStore: s, gate: make(chan struct{}), entered: make(chan struct{}, 1000)}
}

func (g *gatedStore) Increment(ctx context.Context, name string, by int64) (int64, error) {
	g.calls.Add(1)
	g.entered <- struct{}{}
	<-g.gate
	return g.CounterStore.Increment(ctx, name, by)
}

// serialOrderExists reports whether increments that each report the value
// they produced can be put in one serial order starting at 0: each is an
// edge prev=value-by -> value, and such an order is an Euler path from 0.
func serialOrderExists(bys, values []int64) bool {
	out := map[int64]int{}
	in := map[int64]int{}
	parent := map[int64]int64{}
	var find func(int64) int64
	find = func(x int64) int64 {
		if p, ok := parent[x]; ok && p != x {
			r := find(p)
			parent[x] = r
			return r
		}
		parent[x] = x
		return x
	}
	var final int64
	for i := range bys {
		prev := values[i] - bys[i]
		out[prev]++
		in[values[i]]++
		parent[find(prev)] = find(values[i])
		final += bys[i]
	}
	if len(bys) == 0 {
		return true
	}
	root := find(0)
	vertices := map[int64]bool{0: true, final: true}
	for v := range out {
		vertices[v] = true
	}
	for v := range in {
		vertices[v] = true
	}
	for v := range vertices {
		want := 0
		if v == 0 {
			want++
		}
		if v == final {
			want--
		}
		if out[v]-in[v] != want || find(v) != root {
			return false
		}
	}
	return true
}

// Property: concurrent increments with random positive and negative steps on
// a few counters return values that some serial order of them produces.
func TestCoalescedIncrementsAreConsistentWithASerialOrder(t *testing.T) {
	store := mustStore(t)
	svc := counters.NewService(counters.BackendOf(coalesce.New(store, coalesce.Options{MaxRound: 64, MaxInFlight: 3})))
	names := []string{"p/a", "p/b", "p/c"}
	const workers, each = 24, 150
	type obs struct{ by, value int64 }
	results := make([][]obs, len(names))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 7))
			for i := 0; i < each; i++ {
				k := rng.IntN(len(names))
				by := rng.Int64N(21) - 10
				v, err := svc.Increment(context.Background(), names[k], by)
				if err != nil {
					t.Errorf("Increment: %v", err)
					return
				}
				mu.Lock()
				results[k] = append(results[k], obs{by, v})
				mu.Unlock()
			}
		}(uint64(w))
	}
	wg.Wait()
	for k, name := range names {
		var bys, values []int64
		var sum int64
		for _, o := range results[k] {
			bys, values = append(bys, o.by), append(values, o.value)
			sum += o.by
		}
		if !serialOrderExists(bys, values) {
			t.Errorf("%s: %d returned values fit no serial order", name, len(values))
		}
		c, err := svc.Get(context.Background(), name)
		if err != nil || c.Value != sum {
			t.Errorf("%s: final %v (%v), want sum of steps %d", name, c, err, sum)
		}
	}
}

func TestSerialOrderCheckRejectsImpossibleAnswers(t *testing.T) {
	tests := []struct {
		name        string
		bys, values []int64
		want        bool
	}{
		{"one after another", []int64{1, 1, 1}, []int64{1, 2, 3}, true},
		{"any arrival order", []int64{1, 1, 1}, []int64{3, 1, 2}, true},
		{"down and up", []int64{-2, 5}, []int64{3, 5}, true},
		{"doubled value", []int64{1, 1}, []int64{1, 1}, false},
		{"value from nowhere", []int64{1, 1}, []int64{1, 3}, false},
		{"lost update", []int64{2, 3}, []int64{2, 3}, false},
	}
	for _, tt := range tests {
		if got := serialOrderExists(tt.bys, tt.values); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Many queued +1 steps on a counter close to MaxInt64: their sum overflows
// while the first ten fit one by one. Exactly those ten succeed, with the
// values a serial run gives them; the rest get out_of_range.
func TestOverflowingBatchIsSplitSoRequestsThatFitSucceed(t *testing.T) {
	real := mustStore(t)
	ctx := context.Background()
	if _, _, err := real.Set(ctx, counters.SetRequest{Name: "big", Value: math.MaxInt64 - 10, Min: counters.Bound{Keep: true}, Max: counters.Bound{Keep: true}}); err != nil {
		t.Fatal(err)
	}
	g := newGated(real)
	svc := counters.NewService(counters.BackendOf(coalesce.New(g, coalesce.Options{MaxInFlight: 1})))

	first := make(chan error, 1)
	go func() { _, err := svc.Increment(ctx, "big", 0); first <- err }()
	<-g.entered // the zero step is in flight; everything after queues
	const n = 20
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	values := make(chan int64, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := svc.Increment(ctx, "big", 1)
			switch counters.ErrorCode(err) {
			case "":
				ok.Add(1)
				values <- v
			case counters.EOUTOFRANGE:
				refused.Add(1)
			default:
				t.Errorf("unexpected error %v", err)
			}
		}()
	}
	waitQueued(t, svc, 20*time.Millisecond)
	close(g.gate)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	close(values)
	if ok.Load() != 10 || refused.Load() != 10 {
		t.Fatalf("%d succeeded and %d refused, want 10 and 10", ok.Load(), refused.Load())
	}
	seen := map[int64]bool{}
	for v := range values {
		if v <= math.MaxInt64-10 || seen[v] {
			t.Fatalf("value %d wrong or doubled", v)
		}
		seen[v] = true
	}
	c, _ := real.Get(ctx, "big")
	if c.Value != math.MaxInt64 {
		t.Fatalf("final %d, want MaxInt64", c.Value)
	}
}

// waitQueued gives goroutines time to reach the queue; the assertions do not
// depend on it, only how much the test exercises batching.
func waitQueued(t *testing.T, _ counters.Service, d time.Duration) { time.Sleep(d) }

// Fifty concurrent -1 on a stock of 20 with min 0: twenty succeed, thirty
// are refused, the stock ends at 0; batches that break the bound are split.
func TestBoundedStockNeverGoesBelowMinUnderCoalescing(t *testing.T) {
	real := mustStore(t)
	ctx := context.Background()
	zero := int64(0)
	if _, _, err := real.Set(ctx, counters.SetRequest{Name: "stock", Value: 20, Min: counters.Bound{Value: &zero}, Max: counters.Bound{Keep: true}}); err != nil {
		t.Fatal(err)
	}
	svc := counters.NewService(counters.BackendOf(coalesce.New(real, coalesce.Options{})))
	var wg sync.WaitGroup
	var ok, refused atomic.Int64
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svc.Increment(ctx, "stock", -1)
			switch counters.ErrorCode(err) {
			case "":
				ok.Add(1)
			case counters.EOUTOFRANGE:
				refused.Add(1)
			default:
				t.Errorf("unexpected %v", err)
			}
		}()
	}
	wg.Wait()
	c, _ := real.Get(ctx, "stock")
	if ok.Load() != 20 || refused.Load() != 30 || c.Value != 0 {
		t.Fatalf("ok %d refused %d final %d, want 20, 30, 0", ok.Load(), refused.Load(), c.Value)
	}
}

// A queued increment whose caller gives up before its batch starts is never
// applied, and the caller is told nothing changed.
func TestQueuedIncrementWhoseCallerGaveUpIsNotApplied(t *testing.T) {
	real := mustStore(t)
	g := newGated(real)
	svc := counters.NewService(counters.BackendOf(coalesce.New(g, coalesce.Options{MaxInFlight: 1})))
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { _, err := svc.Increment(ctx, "q", 1); first <- err }()
	<-g.entered
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err := svc.Increment(short, "q", 100)
	var de *counters.Error
	if !errors.As(err, &de) || de.Code != counters.EUNAVAILABLE {
		t.Fatalf("gave-up increment: %v, want unavailable", err)
	}
	close(g.gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if v, err := svc.Increment(ctx, "q", 0); err != nil || v != 1 {
		t.Fatalf("value %d (%v), want 1: the abandoned +100 must not count", v, err)
	}
}

// Increments queued on many counters share one transaction, and each still
// gets its own serial value.
func TestIncrementsOfManyCountersShareATransactionAndStayExact(t *testing.T) {
	real := mustStore(t)
	g := newGated(real)
	svc := counters.NewService(counters.BackendOf(coalesce.New(g, coalesce.Options{MaxInFlight: 1})))
	ctx := context.Background()
	first := make(chan error, 1)
	go func() { _, err := svc.Increment(ctx, "m/0", 1); first <- err }()
	<-g.entered
	const names, each = 10, 5
	var wg sync.WaitGroup
	got := make([][]int64, names)
	var mu sync.Mutex
	for k := 0; k < names; k++ {
		for i := 0; i < each; i++ {
			wg.Add(1)
			go func(k int) {
				defer wg.Done()
				v, err := svc.Increment(ctx, "m/"+string(rune('a'+k)), 2)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[k] = append(got[k], v)
				mu.Unlock()
			}(k)
		}
	}
	time.Sleep(50 * time.Millisecond)
	close(g.gate)
	wg.Wait()
	<-first
	for k := range got {
		seen := map[int64]bool{}
		for _, v := range got[k] {
			if v%2 != 0 || v < 2 || v > 2*each || seen[v] {
				t.Fatalf("counter %d: values %v are not a serial run of +2", k, got[k])
			}
			seen[v] = true
		}
	}
	if calls := g.calls.Load(); calls >= names*each {
		t.Fatalf("%d single-counter statements for %d increments: nothing was shared", calls, names*each+1)
	}
}

// Two services with their own connection pools, as two processes would
// have, hammer one counter on one database: every value is handed out once.
func TestTwoServicesOnOneDatabaseStayExact(t *testing.T) {
	dsn := storetest.MigratedDSN(t)
	ctx := context.Background()
	var svcs []counters.Service
	for i := 0; i < 2; i++ {
		s, _ := storetest.OpenStore(t, dsn)
		svcs = append(svcs, counters.NewService(counters.BackendOf(coalesce.New(s, coalesce.Options{}))))
	}
	const workers, each = 16, 250
	var mu sync.Mutex
	seen := map[int64]bool{}
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(svc counters.Service) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				v, err := svc.Increment(ctx, "shared", 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if seen[v] {
					t.Errorf("value %d handed out twice", v)
				}
				seen[v] = true
				mu.Unlock()
			}
		}(svcs[w%2])
	}
	wg.Wait()
	if len(seen) != workers*each {
		t.Fatalf("%d distinct values, want %d", len(seen), workers*each)
	}
	for v := int64(1); v <= workers*each; v++ {
		if !seen[v] {
			t.Fatalf("value %d missing", v)
		}
	}
}
