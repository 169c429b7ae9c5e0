package storage_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/storage"
)

// seam is a recorder and an observer of the change seam: it keeps what
// each side was told, and as a recorder it checks that it runs inside the
// change's transaction (it sees the new value there) or fails on demand.
type seam struct {
	mu       sync.Mutex
	recorded []counters.Change
	observed []counters.Change
	fail     error
	inTx     []string // what Record found in its transaction that it should not
}

func (s *seam) Wants(name string) bool { return strings.HasPrefix(name, "seam/") }

func (s *seam) Record(ctx context.Context, tx storage.Execer, changes []counters.Change) error {
	for _, c := range changes {
		var v int64
		err := queryRow(ctx, tx, "SELECT value FROM counter WHERE name = ?", c.Name, &v)
		switch {
		case c.Deleted && err == nil:
			s.note("%s: still there inside its deletion's transaction", c.Name)
		case !c.Deleted && err != nil:
			s.note("%s: reading it inside its transaction: %v", c.Name, err)
		case !c.Deleted && v != c.Value:
			s.note("%s: %d inside its transaction, the change says %d", c.Name, v, c.Value)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recorded = append(s.recorded, changes...)
	return s.fail
}

// Wants serves as Observer's too.

func (s *seam) Committed(_ context.Context, changes []counters.Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.observed = append(s.observed, changes...)
}

func (s *seam) note(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inTx = append(s.inTx, fmt.Sprintf(format, args...))
}

func (s *seam) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recorded, s.observed, s.inTx, s.fail = nil, nil, nil, nil
}

func queryRow(ctx context.Context, ex storage.Execer, q string, arg any, dest any) error {
	rows, err := ex.QueryContext(ctx, q, arg)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return errors.New("no row")
	}
	return rows.Scan(dest)
}

// change is what a test expects of one Change.
type change struct {
	name        string
	prev, value int64
	deleted     bool
	steps       int64 // the sum of the steps
}

func (c change) String() string {
	return fmt.Sprintf("%s %d->%d deleted=%v steps=%d", c.name, c.prev, c.value, c.deleted, c.steps)
}

func summarize(cs []counters.Change) []change {
	out := make([]change, len(cs))
	for i, c := range cs {
		var steps int64
		for _, p := range c.Steps {
			steps += p.By
		}
		out[i] = change{c.Name, c.Prev, c.Value, c.Deleted, steps}
		if c.At.IsZero() {
			out[i].name += " (without At)"
		}
	}
	slices.SortFunc(out, func(a, b change) int { return strings.Compare(a.name, b.name) })
	return out
}

func lines(ls ...counters.ImportLine) func(func(counters.ImportLine) bool) {
	return slices.Values(ls)
}

// idem is a fresh idempotency key, so that no case replays another's.
func idem(k string) counters.Idempotency {
	return counters.Idempotency{Key: fmt.Sprintf("%s-%d", k, keySeq.Add(1))}
}

var keySeq atomic.Int64

// writePaths drives every write method of the store's interfaces
// (counters.Store, OnceStore, Importer) on counters that
// start as seam/a = 10 and seam/b missing, with the changes each must
// report. The reads are listed apart; a method in neither list fails the
// test, so that a new write path cannot skip the seam unnoticed.
var (
	reads      = []string{"Get", "List"}
	writePaths = map[string]struct {
		write func(ctx context.Context, s *storage.CounterStore) error
		want  []change
	}{
		"Increment": {func(ctx context.Context, s *storage.CounterStore) error {
			_, err := s.Increment(ctx, "seam/a", 5)
			return err
		}, []change{{"seam/a", 10, 15, false, 5}}},
		"IncrementMany": {func(ctx context.Context, s *storage.CounterStore) error {
			_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "seam/b", By: 3}, {Name: "seam/a", By: -2}})
			return err
		}, []change{{"seam/a", 10, 8, false, -2}, {"seam/b", 0, 3, false, 3}}},
		"Batch": {func(ctx context.Context, s *storage.CounterStore) error {
			_, err := s.Batch(ctx, []counters.Increment{{Name: "seam/a", By: 1}, {Name: "seam/b", By: 4}, {Name: "seam/a", By: 2}})
			return err
		}, []change{{"seam/a", 10, 13, false, 3}, {"seam/b", 0, 4, false, 4}}},
		"Set": {func(ctx context.Context, s *storage.CounterStore) error {
			_, _, err := s.Set(ctx, counters.SetRequest{Name: "seam/a", Value: 7, Min: counters.Bound{Keep: true}, Max: counters.Bound{Keep: true}})
			return err
		}, []change{{"seam/a", 10, 7, false, 0}}},
		"Delete": {func(ctx context.Context, s *storage.CounterStore) error {
			return s.Delete(ctx, "seam/a")
		}, []change{{"seam/a", 10, 10, true, 0}}},
		"Reset": {func(ctx context.Context, s *storage.CounterStore) error {
			_, err := s.Reset(ctx, counters.ResetRequest{Prefix: "seam/", Value: 1})
			return err
		}, []change{{"seam/a", 10, 1, false, 0}}},
		"IncrementOnce": {func(ctx context.Context, s *storage.CounterStore) error {
			_, _, err := s.IncrementOnce(ctx, idem("i"), "seam/b", 6)
			return err
		}, []change{{"seam/b", 0, 6, false, 6}}},
		"SetOnce": {func(ctx context.Context, s *storage.CounterStore) error {
			_, _, _, err := s.SetOnce(ctx, idem("s"), counters.SetRequest{Name: "seam/b", Value: -4, Min: counters.Bound{Keep: true}, Max: counters.Bound{Keep: true}})
			return err
		}, []change{{"seam/b", 0, -4, false, 0}}},
		"BatchOnce": {func(ctx context.Context, s *storage.CounterStore) error {
			_, _, err := s.BatchOnce(ctx, idem("b"), []counters.Increment{{Name: "seam/a", By: 10}})
			return err
		}, []change{{"seam/a", 10, 20, false, 10}}},
		"Import": {func(ctx context.Context, s *storage.CounterStore) error {
			_, err := s.Import(ctx, counters.ImportOptions{Mode: counters.ImportOverwrite},
				lines(counters.ImportLine{Line: 1, Counter: counters.Counter{Name: "seam/a", Value: 99}},
					counters.ImportLine{Line: 2, Counter: counters.Counter{Name: "seam/b", Value: 5}}))
			return err
		}, []change{{"seam/a", 10, 99, false, 0}, {"seam/b", 0, 5, false, 0}}},
	}
)

// Every write method of the store reports each counter it changed, once,
// with the value before and after, inside its transaction and after the
// commit, on every way the store writes (see forEachPath), history on or
// off.
func TestEveryWritePathReportsItsChanges(t *testing.T) {
	t.Parallel()
	for _, store := range []reflect.Type{reflect.TypeFor[counters.Store](), reflect.TypeFor[counters.OnceStore](), reflect.TypeFor[counters.Importer]()} {
		for i := range store.NumMethod() {
			m := store.Method(i).Name
			if _, ok := writePaths[m]; !ok && !slices.Contains(reads, m) {
				t.Errorf("%s.%s is neither a read nor a write path this test drives: report its changes through the seam (storage/changes.go) and add it to writePaths", store, m)
			}
		}
	}
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, _ := open(dsn)
		sm := &seam{}
		s.Record(sm)
		s.Observe(sm)
		ctx := context.Background()
		for _, history := range []bool{true, false} {
			for name, path := range writePaths {
				t.Run(fmt.Sprintf("%s/history=%v", name, history), func(t *testing.T) {
					s.History = history
					sm.reset()
					for _, n := range []string{"seam/a", "seam/b"} {
						s.Delete(ctx, n)
					}
					set(t, s, "seam/a", 10)
					sm.reset()
					if err := path.write(ctx, s); err != nil {
						t.Fatal(err)
					}
					if got := summarize(sm.recorded); !slices.Equal(got, path.want) {
						t.Errorf("recorded in the transaction %v, want %v", got, path.want)
					}
					if got := summarize(sm.observed); !slices.Equal(got, path.want) {
						t.Errorf("observed after the commit %v, want %v", got, path.want)
					}
					if len(sm.inTx) > 0 {
						t.Errorf("the recorder did not run inside the change's transaction: %v", sm.inTx)
					}
				})
			}
		}
	})
}

// A recorder's error rolls its change back, whichever path the change
// takes, and nobody is told of it.
func TestARecorderThatFailsRollsTheChangeBack(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, _ := open(dsn)
		sm := &seam{}
		s.Record(sm)
		s.Observe(sm)
		ctx := context.Background()
		for name, path := range writePaths {
			t.Run(name, func(t *testing.T) {
				sm.reset()
				for _, n := range []string{"seam/a", "seam/b"} {
					s.Delete(ctx, n)
				}
				set(t, s, "seam/a", 10)
				sm.reset()
				sm.fail = errors.New("refused by the recorder")
				if err := path.write(ctx, s); err == nil {
					t.Fatal("the write succeeded though its recorder failed")
				}
				if got := value(t, s, "seam/a"); got != 10 {
					t.Errorf("seam/a = %d after the failed write, want 10", got)
				}
				if _, err := s.Get(ctx, "seam/b"); counters.ErrorCode(err) != counters.ENOTFOUND {
					t.Errorf("seam/b exists after the failed write (%v)", err)
				}
				if len(sm.observed) > 0 {
					t.Errorf("observers were told of a change that rolled back: %v", summarize(sm.observed))
				}
			})
		}
	})
}

// A repeat of an idempotent write changes nothing, so it reports nothing.
func TestAReplayReportsNoChange(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	sm := &seam{}
	s.Record(sm)
	s.Observe(sm)
	ctx := context.Background()
	for range 2 {
		sm.reset()
		if _, _, err := s.IncrementOnce(ctx, counters.Idempotency{Key: "again"}, "seam/a", 1); err != nil {
			t.Fatal(err)
		}
	}
	if len(sm.recorded)+len(sm.observed) > 0 {
		t.Errorf("the replay reported %v in the transaction and %v after it", summarize(sm.recorded), summarize(sm.observed))
	}
}

// Observers are told only of the counters they want, and an atomic
// import keeps no more than that until its commit: a million lines must
// not be a million changes held in memory.
func TestObserversAreToldOnlyOfWhatTheyWant(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	sm := &seam{}
	s.Observe(sm)
	ctx := context.Background()
	var ls []counters.ImportLine
	for i := range 2500 {
		ls = append(ls, counters.ImportLine{Line: int64(i + 1), Counter: counters.Counter{Name: fmt.Sprintf("other/%04d", i), Value: 1}})
	}
	ls = append(ls, counters.ImportLine{Line: 2501, Counter: counters.Counter{Name: "seam/a", Value: 7}})
	for _, atomic := range []bool{false, true} {
		sm.reset()
		s.Delete(ctx, "seam/a")
		sm.reset()
		if _, err := s.Import(ctx, counters.ImportOptions{Mode: counters.ImportOverwrite, Atomic: atomic}, slices.Values(ls)); err != nil {
			t.Fatal(err)
		}
		if got, want := summarize(sm.observed), []change{{"seam/a", 0, 7, false, 0}}; !slices.Equal(got, want) {
			t.Errorf("atomic=%v: observed %v, want %v", atomic, got, want)
		}
	}
}

// allDeletions is a DeletionObserver: it wants the seam's counters, and
// every deletion.
type allDeletions struct{ *seam }

func (allDeletions) WantsDeletions() bool { return true }

// A DeletionObserver is told of the deletion of a counter it does not
// want, and of nothing else of that counter.
func TestADeletionObserverIsToldOfEveryDeletion(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	sm := &seam{}
	s.Observe(allDeletions{sm})
	ctx := context.Background()
	set(t, s, "other/deleted", 3)
	if _, err := s.Increment(ctx, "other/deleted", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "other/deleted"); err != nil {
		t.Fatal(err)
	}
	if got, want := summarize(sm.observed), []change{{"other/deleted", 4, 4, true, 0}}; !slices.Equal(got, want) {
		t.Errorf("observed %v, want %v", got, want)
	}
}

func TestWantedKeepsOnlyTheWantedChanges(t *testing.T) {
	t.Parallel()
	cs := []counters.Change{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	for _, tc := range []struct {
		want []string
		keep string
	}{
		{nil, ""}, {[]string{"a", "b", "c"}, "abc"}, {[]string{"b"}, "b"}, {[]string{"a", "c"}, "ac"},
	} {
		got := counters.Wanted(cs, func(n string) bool { return strings.Contains(tc.keep, n) })
		var names []string
		for _, c := range got {
			names = append(names, c.Name)
		}
		if !slices.Equal(names, tc.want) {
			t.Errorf("keeping %q: %v, want %v", tc.keep, names, tc.want)
		}
	}
	if got := counters.Wanted(cs, func(string) bool { return true }); &got[0] != &cs[0] {
		t.Error("all wanted: the changes were copied")
	}
}
