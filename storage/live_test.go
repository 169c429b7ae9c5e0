package storage_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/countersvc/countersvc/live"
	"github.com/countersvc/countersvc/storage"
)

// version is a counter's live version, or 0 when it does not exist.
func version(tb testing.TB, s *storage.CounterStore, name string) int64 {
	tb.Helper()
	rows, err := storage.LiveOf(s).ReadLive(context.Background(), live.Query{Names: []string{name}})
	if err != nil {
		tb.Fatal(err)
	}
	if len(rows) == 0 {
		return 0
	}
	return rows[0].Version
}

// Every write path moves a counter's version (its updated_at) strictly
// forward, even when the writer's clock stands still or goes back: live
// updates order a counter's states and number their events by it.
func TestEveryWriteMovesTheVersionForward(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, _ := open(dsn)
		ctx := context.Background()
		for _, history := range []bool{true, false} {
			for name, path := range writePaths {
				if name == "Delete" {
					continue
				}
				t.Run(fmt.Sprintf("%s/history=%v", name, history), func(t *testing.T) {
					s.History = history
					s.Now = time.Now
					for _, n := range []string{"seam/a", "seam/b"} {
						s.Delete(ctx, n)
					}
					set(t, s, "seam/a", 10)
					set(t, s, "seam/b", 0)
					before := map[string]int64{"seam/a": version(t, s, "seam/a"), "seam/b": version(t, s, "seam/b")}
					s.Now = func() time.Time { return time.UnixMicro(before["seam/a"]).Add(-time.Hour) } // behind the stored versions
					if err := path.write(ctx, s); err != nil {
						t.Fatal(err)
					}
					for _, c := range path.want {
						if got := version(t, s, c.name); got <= before[c.name] {
							t.Errorf("%s: version %d after the write, %d before", c.name, got, before[c.name])
						}
					}
				})
			}
		}
	})
}

// ReadLive reads the named counters, present or not, and those under a
// prefix changed after Since, never the reserved ones.
func TestReadLiveReadsNamesAndRecentChangesUnderPrefixes(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	ctx := context.Background()
	set(t, s, "rl/old", 1)
	since := version(t, s, "rl/old")
	set(t, s, "rl/new", 2)
	set(t, s, "other/x", 3)
	rows, err := storage.LiveOf(s).ReadLive(ctx, live.Query{Names: []string{"other/x", "rl/missing"}, Prefixes: []string{"rl/"}, Since: since})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, u := range rows {
		got[u.Name] = u.Value
		if u.Version <= 0 {
			t.Errorf("%s: version %d", u.Name, u.Version)
		}
	}
	want := map[string]int64{"rl/new": 2, "other/x": 3}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read %v, want %v", got, want)
	}
}
