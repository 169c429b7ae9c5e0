package storage_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/visitors"
)

// visitorDay is the UTC day the visitor tests count on; markDay the same
// as Mark takes it.
var (
	visitorDay = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	markDay    = visitorDay.Unix() / (24 * 60 * 60)
)

// visitorCounter is a visitor counter (a process's) on the store of db, at
// noon of visitorDay.
func visitorCounter(db *storage.DB) *visitors.Counter {
	return visitors.New(storage.NewVisitorStore(db), visitors.Options{Now: func() time.Time { return visitorDay.Add(12 * time.Hour) }})
}

func randomIDs(n int) []visitors.ID {
	ids := make([]visitors.ID, n)
	for i := range ids {
		rand.Read(ids[i][:])
	}
	return ids
}

// visitorsOn is name's (or prefix's) visitors on visitorDay as c reads them.
func visitorsOn(tb testing.TB, c *visitors.Counter, name, prefix string) int64 {
	tb.Helper()
	days, err := c.Days(context.Background(), name, prefix, visitorDay, visitorDay.AddDate(0, 0, 1))
	if err != nil {
		tb.Fatal(err)
	}
	return days[visitorDay]
}

// The contract's accuracy, through MySQL: exact within 3 below 100 visitors,
// within 2% from 1,000 up, also past the size where a sketch turns dense.
func TestVisitorEstimatesAreWithinTheContract(t *testing.T) {
	t.Parallel()
	store, db := mustOpenStore(t)
	c := visitorCounter(db)
	for _, n := range []int{1, 3, 10, 57, 99, 1000, 2500, 10000, 70000, 150000} {
		name := fmt.Sprintf("hits/n%d", n)
		set(t, store, name, 0)
		for _, id := range randomIDs(n) {
			c.Mark(name, markDay, id)
		}
		if err := c.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := visitorsOn(t, c, name, "")
		bound := 3.0
		if n >= 1000 {
			bound = 0.02 * float64(n)
		}
		if math.Abs(float64(got)-float64(n)) > bound {
			t.Errorf("%d visitors estimated as %d, want within %.0f", n, got, bound)
		}
	}
}

// Two processes that flush the same visitors and new ones into one sketch
// at once lose none and count none twice.
func TestSketchesOfProcessesAreUnitedInMySQL(t *testing.T) {
	t.Parallel()
	store, db := mustOpenStore(t)
	set(t, store, "hits/u", 0)
	shared, a, b := randomIDs(1500), randomIDs(500), randomIDs(500)
	procs := []*visitors.Counter{visitorCounter(db), visitorCounter(db)}
	for i, own := range [][]visitors.ID{a, b} {
		for _, id := range append(own, shared...) {
			procs[i].Mark("hits/u", markDay, id)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, len(procs))
	for i, p := range procs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = p.Flush(context.Background()) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := visitorsOn(t, visitorCounter(db), "hits/u", ""); math.Abs(float64(got)-2500) > 50 {
		t.Fatalf("%d visitors, want 2500 within 2%%", got)
	}
}

// A deleted counter takes its sketches with it, and a flush for a counter
// deleted since writes none.
func TestSketchesGoWithTheirCounter(t *testing.T) {
	t.Parallel()
	store, db := mustOpenStore(t)
	c := visitorCounter(db)
	set(t, store, "hits/gone", 0)
	c.Mark("hits/gone", markDay, randomIDs(1)[0])
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := store.Delete(context.Background(), "hits/gone"); err != nil {
		t.Fatal(err)
	}
	c.Mark("hits/gone", markDay, randomIDs(1)[0]) // seen before the delete, written after
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := db.QueryRow("SELECT COUNT(*) FROM visitor_sketch WHERE name = 'hits/gone'").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 0 {
		t.Fatalf("%d sketches of a deleted counter", rows)
	}
}

// The salt is shared by processes on a day, so they agree on identifiers,
// a new one is drawn the next day, so identifiers cannot be linked across
// days, and a past day's is destroyed by the purge.
func TestSaltsAgreeWithinADayChangeTheNextAndAreDestroyed(t *testing.T) {
	t.Parallel()
	_, db := mustOpenStore(t)
	ctx := context.Background()
	vs := storage.NewVisitorStore(db)
	day1 := func() time.Time { return time.Date(2026, 3, 1, 23, 59, 0, 0, time.UTC) }
	day2 := func() time.Time { return time.Date(2026, 3, 2, 0, 1, 0, 0, time.UTC) }
	a, b, c := visitors.NewKeys(vs, day1), visitors.NewKeys(storage.NewVisitorStore(db), day1), visitors.NewKeys(vs, day2)
	ka, err := a.Key(ctx, "198.51.100.1")
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := b.Key(ctx, "198.51.100.1")
	kc, _ := c.Key(ctx, "198.51.100.1")
	other, _ := a.Key(ctx, "198.51.100.2")
	split, _ := a.Key(ctx, "198.51.100", ".1")
	if ka != kb {
		t.Errorf("two processes on one day: %s != %s", ka, kb)
	}
	for what, k := range map[string]string{"next day": kc, "other client": other, "parts split elsewhere": split} {
		if k == ka {
			t.Errorf("%s: key %s is the same", what, k)
		}
	}
	n, err := vs.PurgeSalts(ctx, day2())
	if err != nil || n != 1 {
		t.Fatalf("purge: %d salts destroyed, %v; want day 1's", n, err)
	}
	var left int
	db.QueryRow("SELECT COUNT(*) FROM visitor_salt WHERE day < '2026-03-02'").Scan(&left)
	if left != 0 {
		t.Fatalf("%d past salts left", left)
	}
}

// What a year of visitors costs a counter in MySQL, for docs/visitors.md:
// a page with 30 visitors a day, one with 1,000, one with 100,000.
func TestAYearOfSketchesCostsWhatTheGuideSays(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("writes a year of sketches")
	}
	store, db := mustOpenStore(t)
	vs := storage.NewVisitorStore(db)
	for _, tc := range []struct {
		perDay  int
		maxYear int64 // bytes, as docs/visitors.md says
	}{{30, 160 << 10}, {1000, 2 << 20}, {100000, 26 << 20}} {
		name := fmt.Sprintf("hits/year%d", tc.perDay)
		set(t, store, name, 0)
		// One day's sketch, measured, stands for each day of the year: the
		// size depends on the number of visitors, not on who they are.
		day := visitorDay
		c := visitors.New(vs, visitors.Options{Now: func() time.Time { return day }})
		for _, id := range randomIDs(tc.perDay) {
			c.Mark(name, markDay, id)
		}
		if err := c.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		_, bytes, err := vs.SketchBytes(context.Background(), name)
		if err != nil {
			t.Fatal(err)
		}
		year := bytes * 365
		t.Logf("%d visitors a day: a day's sketch %d bytes, a year %d KiB", tc.perDay, bytes, year>>10)
		if year > tc.maxYear {
			t.Errorf("%d visitors a day: a year takes %d bytes, more than the guide's %d", tc.perDay, year, tc.maxYear)
		}
	}
}
