package visitors_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/visitors"
)

// memStore keeps the sketches in memory, as storage/ keeps them in MySQL
// (tested there and in app/): MergeSketches unites with the merge it is
// given, keyed by counter and day.
type memStore struct {
	visitors.Salts
	mu       sync.Mutex
	sketches map[string][]byte // name + "@" + day
	fail     error
	merges   int
	purged   []time.Time
}

func newMemStore() *memStore {
	return &memStore{Salts: visitors.LocalSalts(), sketches: map[string][]byte{}}
}

func key(name string, day time.Time) string { return name + "@" + day.Format(time.DateOnly) }

func (s *memStore) MergeSketches(_ context.Context, sketches []visitors.Sketch, merge func(stored, add []byte) ([]byte, error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	for _, sk := range sketches {
		s.merges++
		united, err := merge(s.sketches[key(sk.Name, sk.Day)], sk.Data)
		if err != nil {
			return err
		}
		s.sketches[key(sk.Name, sk.Day)] = united
	}
	return nil
}

func (s *memStore) Sketches(_ context.Context, name, prefix string, from, to time.Time) ([]visitors.Sketch, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []visitors.Sketch
	for k, data := range s.sketches {
		n, d, _ := strings.Cut(k, "@")
		day, _ := time.Parse(time.DateOnly, d)
		if day.Before(from) || !day.Before(to) || (name != "" && n != name) || (name == "" && !strings.HasPrefix(n, prefix)) {
			continue
		}
		out = append(out, visitors.Sketch{Name: n, Day: day, Data: data})
	}
	return out, nil
}

func (s *memStore) PurgeSalts(_ context.Context, before time.Time) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.purged = append(s.purged, before)
	return 0, nil
}

var (
	day1 = time.Date(2026, 3, 10, 0, 0, 0, 0, time.UTC)
	day2 = day1.AddDate(0, 0, 1)
)

// mark marks n visitors, numbered from first, on name on the day of at.
func mark(t *testing.T, c *visitors.Counter, at time.Time, name string, first, n int) {
	t.Helper()
	keys := visitors.NewKeys(fixedSalts(strings.Repeat("s", visitors.SaltSize)), func() time.Time { return at })
	dk, err := keys.Today(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i := first; i < first+n; i++ {
		c.Mark(name, dk.Day(), dk.ID(fmt.Sprint("visitor ", i)))
	}
}

func days(t *testing.T, c *visitors.Counter, name, prefix string) map[time.Time]int64 {
	t.Helper()
	got, err := c.Days(context.Background(), name, prefix, day1, day2.AddDate(0, 0, 1))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Sketches are united, never summed: a visitor seen again, before or after
// a flush, by another process, or on another page of a prefix, counts once.
func TestVisitorsAreUnitedNotSummed(t *testing.T) {
	store := newMemStore()
	a := visitors.New(store, visitors.Options{})
	b := visitors.New(store, visitors.Options{}) // another process
	mark(t, a, day1, "page/a", 0, 100)
	if got := days(t, a, "page/a", "")[day1]; got != 100 {
		t.Fatalf("before any flush: %d visitors, want 100 from what is pending", got)
	}
	if err := a.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mark(t, a, day1, "page/a", 50, 100) // 50 seen already, 50 new
	mark(t, b, day1, "page/a", 100, 50) // all seen already
	mark(t, b, day1, "page/b", 0, 30)   // the same visitors on another page
	mark(t, b, day2, "page/a", 0, 10)   // and on the next day
	if got := days(t, a, "page/a", "")[day1]; got != 150 {
		t.Errorf("page/a on day 1, stored and pending: %d, want 150", got)
	}
	for _, c := range []*visitors.Counter{a, b} {
		if err := c.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, prefix string
		want         map[time.Time]int64
	}{
		{"page/a", "", map[time.Time]int64{day1: 150, day2: 10}},
		{"page/b", "", map[time.Time]int64{day1: 30}},
		{"", "page/", map[time.Time]int64{day1: 150, day2: 10}},
		{"", "other/", map[time.Time]int64{}},
	}
	for _, tc := range tests {
		got := days(t, visitors.New(store, visitors.Options{}), tc.name, tc.prefix)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Days(%q, %q) = %v, want %v", tc.name, tc.prefix, got, tc.want)
		}
	}
}

// A flush that fails keeps everything pending, visitors marked meanwhile
// too, and the next one writes it: a crash is the only loss.
func TestAFailedFlushKeepsItsVisitorsForTheNext(t *testing.T) {
	store := newMemStore()
	c := visitors.New(store, visitors.Options{})
	mark(t, c, day1, "p", 0, 40)
	store.fail = errors.New("MySQL is down")
	if err := c.Flush(context.Background()); err == nil {
		t.Fatal("Flush succeeded against a failing store")
	}
	mark(t, c, day1, "p", 30, 20) // 10 new
	store.fail = nil
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := days(t, visitors.New(store, visitors.Options{}), "p", "")[day1]; got != 50 {
		t.Errorf("after the failed flush and the next: %d stored visitors, want 50", got)
	}
	merges := store.merges
	if err := c.Flush(context.Background()); err != nil || store.merges != merges {
		t.Errorf("a flush with nothing pending: %v, %d merges, want none", err, store.merges-merges)
	}
}

func TestAStoredSketchThatDoesNotDecodeIsAnError(t *testing.T) {
	store := newMemStore()
	store.sketches[key("p", day1)] = []byte("not a sketch")
	if _, err := visitors.New(store, visitors.Options{}).Days(context.Background(), "p", "", day1, day2); err == nil {
		t.Error("Days read a sketch that does not decode without an error")
	}
	c := visitors.New(store, visitors.Options{})
	mark(t, c, day1, "p", 0, 1)
	if err := c.Flush(context.Background()); err == nil {
		t.Error("Flush merged into a sketch that does not decode without an error")
	}
}

// Run flushes on its interval and once more when it ends, and destroys
// the salts of the days before yesterday's grace hour, once a day.
func TestRunFlushesAtTheEndAndPurgesPastSalts(t *testing.T) {
	store := newMemStore()
	now := day2.Add(3 * time.Hour)
	c := visitors.New(store, visitors.Options{Flush: 10 * time.Millisecond, Now: func() time.Time { return now }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		store.mu.Lock()
		n := len(store.purged)
		store.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run destroyed no salts within 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	mark(t, c, day2, "p", 0, 5)
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not end within 10 s of its context")
	}
	if got := days(t, visitors.New(store, visitors.Options{}), "p", "")[day2]; got != 5 {
		t.Errorf("after Run ended: %d stored visitors, want the 5 marked before", got)
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.purged) != 1 || !store.purged[0].Equal(day2) {
		t.Errorf("salts purged before %v, want once, before %v", store.purged, day2)
	}
}
