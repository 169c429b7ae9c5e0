package storage_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
	"github.com/go-sql-driver/mysql"
)

func mustOpenStore(tb testing.TB) (*storage.CounterStore, *storage.DB) {
	tb.Helper()
	return storetest.OpenStore(tb, storetest.MigratedDSN(tb))
}

func int64p(v int64) *int64 { return &v }

func set(tb testing.TB, s *storage.CounterStore, name string, v int64) {
	tb.Helper()
	if _, _, err := s.Set(context.Background(), counters.SetRequest{Name: name, Value: v, Min: counters.Bound{Keep: true}, Max: counters.Bound{Keep: true}}); err != nil {
		tb.Fatal(err)
	}
}

func value(tb testing.TB, s *storage.CounterStore, name string) int64 {
	tb.Helper()
	c, err := s.Get(context.Background(), name)
	if err != nil {
		tb.Fatal(err)
	}
	return c.Value
}

// Each row is one trap of LAST_INSERT_ID(expr) on MariaDB: negative results,
// zero, crossing zero, the int64 extremes and overflow.
func TestIncrementReturnsExactValueAcrossTraps(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	ctx := context.Background()
	tests := []struct {
		name    string
		start   *int64 // nil: counter missing
		by      int64
		want    int64
		wantErr string
	}{
		{"missing counter starts at zero", nil, 1, 1, ""},
		{"missing counter with negative step", nil, -5, -5, ""},
		{"missing counter with zero step", nil, 0, 0, ""},
		{"step of zero keeps value", int64p(42), 0, 42, ""},
		{"negative result from zero", int64p(0), -5, -5, ""},
		{"crossing zero upwards", int64p(-3), 5, 2, ""},
		{"landing exactly on zero", int64p(7), -7, 0, ""},
		{"reach max", int64p(math.MaxInt64 - 1), 1, math.MaxInt64, ""},
		{"reach min", int64p(math.MinInt64 + 1), -1, math.MinInt64, ""},
		{"min plus max", int64p(math.MinInt64), math.MaxInt64, -1, ""},
		{"overflow above max", int64p(math.MaxInt64), 1, math.MaxInt64, counters.EOUTOFRANGE},
		{"overflow below min", int64p(math.MinInt64), -1, math.MinInt64, counters.EOUTOFRANGE},
		{"step of min int64 on positive", int64p(5), math.MinInt64, 5 + math.MinInt64, ""},
		{"huge step on missing counter", nil, math.MinInt64, math.MinInt64, ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			name := "trap/" + string(rune('a'+i))
			if tt.start != nil {
				set(t, s, name, *tt.start)
			}
			got, err := s.Increment(ctx, name, tt.by)
			if code := counters.ErrorCode(err); code != tt.wantErr {
				t.Fatalf("error code = %q (%v), want %q", code, err, tt.wantErr)
			}
			if tt.wantErr == "" && got != tt.want {
				t.Fatalf("Increment = %d, want %d", got, tt.want)
			}
			if tt.wantErr != "" && tt.start != nil {
				if v := value(t, s, name); v != *tt.start {
					t.Fatalf("value after failed increment = %d, want unchanged %d", v, *tt.start)
				}
			}
			if tt.wantErr == "" {
				if v := value(t, s, name); v != tt.want {
					t.Fatalf("stored value = %d, want %d", v, tt.want)
				}
			}
		})
	}
}

func TestIncrementRespectsBoundsAndChangesNothingWhenRefused(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	ctx := context.Background()
	_, _, err := s.Set(ctx, counters.SetRequest{Name: "stock", Value: 2, Min: counters.Bound{Value: int64p(0)}, Max: counters.Bound{Value: int64p(3)}})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		by      int64
		want    int64
		wantErr string
	}{
		{-1, 1, ""}, {-1, 0, ""}, {-1, 0, counters.EOUTOFRANGE}, {3, 3, ""}, {1, 3, counters.EOUTOFRANGE}, {0, 3, ""},
	}
	for i, st := range steps {
		got, err := s.Increment(ctx, "stock", st.by)
		if code := counters.ErrorCode(err); code != st.wantErr {
			t.Fatalf("step %d: error %q (%v), want %q", i, code, err, st.wantErr)
		}
		if err == nil && got != st.want {
			t.Fatalf("step %d: got %d, want %d", i, got, st.want)
		}
		if v := value(t, s, "stock"); v != st.want {
			t.Fatalf("step %d: stored %d, want %d", i, v, st.want)
		}
	}
}

func TestSetReportsCreationAndKeepsOrReplacesBounds(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	ctx := context.Background()
	keep := counters.Bound{Keep: true}
	c, created, err := s.Set(ctx, counters.SetRequest{Name: "x", Value: 5, Min: counters.Bound{Value: int64p(0)}, Max: keep})
	if err != nil || !created || c.Value != 5 || c.Min == nil || *c.Min != 0 || c.Max != nil {
		t.Fatalf("first Set = %+v, %v, %v", c, created, err)
	}
	c, created, err = s.Set(ctx, counters.SetRequest{Name: "x", Value: 7, Min: keep, Max: keep})
	if err != nil || created || c.Value != 7 || c.Min == nil || *c.Min != 0 {
		t.Fatalf("second Set = %+v, %v, %v (min must be kept)", c, created, err)
	}
	if _, _, err = s.Set(ctx, counters.SetRequest{Name: "x", Value: -1, Min: keep, Max: keep}); counters.ErrorCode(err) != counters.EOUTOFRANGE {
		t.Fatalf("Set below kept min: %v, want out_of_range", err)
	}
	c, _, err = s.Set(ctx, counters.SetRequest{Name: "x", Value: -1, Min: counters.Bound{}, Max: keep})
	if err != nil || c.Min != nil || c.Value != -1 {
		t.Fatalf("Set removing min = %+v, %v", c, err)
	}
	if _, _, err = s.Set(ctx, counters.SetRequest{Name: "x", Value: 1, CreateOnly: true, Min: keep, Max: keep}); counters.ErrorCode(err) != counters.ECONFLICT {
		t.Fatalf("create-only on existing: %v, want conflict", err)
	}
	got, err := s.Get(ctx, "x")
	if err != nil || got.Value != -1 || got.Min != nil {
		t.Fatalf("Get = %+v, %v", got, err)
	}
}

func TestDeleteAndGetOfMissingCounterAreNotFound(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	ctx := context.Background()
	if _, err := s.Get(ctx, "nope"); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("Get missing: %v", err)
	}
	if err := s.Delete(ctx, "nope"); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("Delete missing: %v", err)
	}
	set(t, s, "yes", 0)
	if err := s.Delete(ctx, "yes"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "yes"); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("Get after delete: %v", err)
	}
}

func TestListPaginatesInByteOrderWithPrefixAndMetacharacters(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	ctx := context.Background()
	names := []string{"a%b", "a_b", "a!b", "aXb", "ab", "b", "Ab", "a\\b", "é"}
	for _, n := range names {
		set(t, s, n, 1)
	}
	var all []string
	after := ""
	for {
		p, err := s.List(ctx, counters.ListFilter{After: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Counters {
			all = append(all, c.Name)
		}
		if p.NextAfter == nil {
			break
		}
		after = *p.NextAfter
	}
	want := []string{"Ab", "a!b", "a%b", "aXb", "a\\b", "a_b", "ab", "b", "é"}
	if len(all) != len(want) {
		t.Fatalf("listed %q, want %q", all, want)
	}
	for i := range want {
		if all[i] != want[i] {
			t.Fatalf("listed %q, want %q", all, want)
		}
	}
	for prefix, n := range map[string]int{"a%": 1, "a_": 1, "a!": 1, "a": 6, "A": 1, "a\\": 1, "z": 0} {
		p, err := s.List(ctx, counters.ListFilter{Prefix: prefix, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Counters) != n || p.NextAfter != nil {
			t.Errorf("prefix %q: %d counters (next %v), want %d", prefix, len(p.Counters), p.NextAfter, n)
		}
	}
}

func TestResetSetsMatchedCountersButNeverReservedOnes(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	ctx := context.Background()
	for _, n := range []string{"books/a", "books/b", "bookshelf", "_tickets/1", "other"} {
		set(t, s, n, 9)
	}
	n, err := s.Reset(ctx, counters.ResetRequest{Prefix: "books/", Value: 0})
	if err != nil || n != 2 {
		t.Fatalf("Reset prefix = %d, %v; want 2", n, err)
	}
	if v := value(t, s, "bookshelf"); v != 9 {
		t.Fatalf("bookshelf = %d, want untouched 9", v)
	}
	n, err = s.Reset(ctx, counters.ResetRequest{All: true, Value: 3})
	if err != nil || n != 4 {
		t.Fatalf("Reset all = %d, %v; want 4", n, err)
	}
	if v := value(t, s, "_tickets/1"); v != 9 {
		t.Fatalf("reserved counter = %d, want untouched 9", v)
	}
}

func TestResetRefusesValueOutsideAnyBoundAndChangesNothing(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	ctx := context.Background()
	set(t, s, "m/a", 5)
	if _, _, err := s.Set(ctx, counters.SetRequest{Name: "m/b", Value: 5, Min: counters.Bound{Value: int64p(1)}, Max: counters.Bound{Keep: true}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reset(ctx, counters.ResetRequest{Prefix: "m/", Value: 0}); counters.ErrorCode(err) != counters.EOUTOFRANGE {
		t.Fatalf("Reset = %v, want out_of_range", err)
	}
	if v := value(t, s, "m/a"); v != 5 {
		t.Fatalf("m/a = %d, want unchanged 5", v)
	}
}

func TestOpenIsIdempotentAndCreatesTheDatabase(t *testing.T) {
	t.Parallel()
	// A database that does not exist yet: the test's own, renamed (the
	// DSN may carry parameters after the name).
	cfg, err := mysql.ParseDSN(testenv.MySQLDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.DBName += "_new"
	dsn := cfg.FormatDSN()
	ctx := context.Background()
	var dbs []*storage.DB
	for i := 0; i < 2; i++ {
		db, err := storage.Open(ctx, dsn, storage.Options{})
		if err != nil {
			t.Fatalf("Open #%d: %v", i+1, err)
		}
		dbs = append(dbs, db)
	}
	if st, err := storage.MigrationStatus(ctx, dbs[1].DB); err != nil || st.Version == 0 || st.Version != st.Latest || st.Dirty {
		t.Fatalf("migration state = %+v, %v; want every migration applied", st, err)
	}
	dbs[1].ExecContext(ctx, "DROP DATABASE IF EXISTS `"+dbName(t, dbs[1])+"`")
	for _, db := range dbs {
		db.Close()
	}
}

func dbName(tb testing.TB, db *storage.DB) string {
	var n string
	if err := db.QueryRow("SELECT DATABASE()").Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// The probe for INSERT ... RETURNING writes a row, to see that it comes
// back, and rolls it back.
func TestReturningProbeIsRightAndLeavesNoRow(t *testing.T) {
	t.Parallel()
	s, db := mustOpenStore(t)
	ctx := context.Background()
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		t.Fatal(err)
	}
	var major, minor int
	fmt.Sscanf(version, "%d.%d", &major, &minor)
	want := strings.Contains(version, "MariaDB") && (major > 10 || major == 10 && minor >= 5)
	if got := s.Returning; got != want {
		t.Errorf("Returning = %v on %s, want %v", got, version, want)
	}
	var rows int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM counter").Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("counter rows after the probe = %d, %v; want 0", rows, err)
	}
}
