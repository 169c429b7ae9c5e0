package history

import (
	"archive/zip"
	"context"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

// Every midnight of every zone in Go's tz database, 1970 to 2037 (so every
// month start too), falls on one of Boundaries: the sums between them are
// all that a rolled-up day keeps, so a zone that needed another quarter
// would be answered wrongly once its days were thinned.
func TestEveryZonesMidnightFallsOnABoundary(t *testing.T) {
	z, err := zip.OpenReader(filepath.Join(runtime.GOROOT(), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Fatalf("the list of zones: %v", err)
	}
	defer z.Close()
	needed := map[int]string{} // quarter -> a zone's midnight there
	zones := 0
	for _, f := range z.File {
		loc, err := time.LoadLocation(f.Name)
		if err != nil {
			continue
		}
		zones++
		// A midnight falls where an offset is in force for a day or more,
		// or where a change skips one: the days around each change of
		// offset (time.ZoneBounds) hold every such case.
		for t := time.Date(1970, 1, 1, 0, 0, 0, 0, loc); t.Year() < 2038; {
			from, until := t.ZoneBounds()
			for _, edge := range []time.Time{from, until} {
				if edge.IsZero() {
					continue
				}
				l := edge.In(loc)
				for dd := -1; dd <= 2; dd++ {
					start := dayStart(l.Year(), l.Month(), l.Day()+dd, loc)
					_, off := start.Zone()
					_, before := start.Add(-24 * time.Hour).Zone()
					if off%(15*60) != 0 || before%(15*60) != 0 || start.Year() < 1970 || start.Year() >= 2038 {
						continue // Monrovia before 1972, Kiritimati before 1979: on no quarter hour
					}
					if _, q := QuarterOf(start); needed[q] == "" {
						needed[q] = f.Name + " " + start.Format(time.RFC3339)
					}
				}
			}
			if until.IsZero() {
				break
			}
			t = until
		}
	}
	if zones < 400 {
		t.Fatalf("read %d zones, want the whole database", zones)
	}
	for q, example := range needed {
		if !slices.Contains(Boundaries, q) {
			t.Errorf("quarter %d is a local midnight (%s) but not a boundary", q, example)
		}
	}
	if !slices.IsSorted(Boundaries) || Boundaries[0] != 0 {
		t.Errorf("Boundaries must be in order and start at 0: %v", Boundaries)
	}
	for _, q := range Boundaries {
		if _, ok := needed[q]; !ok {
			t.Errorf("boundary %d is no zone's midnight: a figure kept for nothing", q)
		}
	}
}

// fakeRoller records the positions each batch starts from and moves
// batches of the sizes it was given.
type fakeRoller struct {
	sizes  []int64
	starts []RollupPosition
	thins  int
}

func (f *fakeRoller) RollupDays(_ context.Context, _, _ time.Time, after RollupPosition, limit int) (int64, RollupPosition, error) {
	f.starts = append(f.starts, after)
	n := f.sizes[0]
	f.sizes = f.sizes[1:]
	return n, RollupPosition{Name: after.Name + "x"}, nil
}

func (f *fakeRoller) ThinDays(context.Context, time.Time, int) (int64, error) {
	f.thins++
	return 0, nil
}

// A pass goes on from where its last batch stopped, until a batch finds
// fewer days than it may take, then thins.
func TestARollupPassGoesOnFromItsLastBatch(t *testing.T) {
	f := &fakeRoller{sizes: []int64{2, 2, 1}}
	r := &Rollup{Store: f, Now: time.Now, Batch: 2, Pause: time.Microsecond}
	n, err := r.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n, int64(5); got != want {
		t.Errorf("moved %d, want %d", got, want)
	}
	if got, want := f.starts, []RollupPosition{{}, {Name: "x"}, {Name: "xx"}}; !slices.Equal(got, want) {
		t.Errorf("batches started at %v, want %v", got, want)
	}
	if f.thins != 1 {
		t.Errorf("thinned %d times, want once", f.thins)
	}
}
