package storage_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
)

// labelledStore is a store that counts labels, keeping bound values per
// label and day (0: the default), with its clock at at.
func labelledStore(t *testing.T, s *storage.CounterStore, bound int) *storage.CounterStore {
	t.Helper()
	s.Count(storage.Labels(true, bound))
	s.Now = testenv.NewClock(at).Now
	return s
}

// breakdownOf reads the breakdown of name (or of prefix, when name is
// empty) by label on the day of at: value -> count, and the history's
// total, from the store's own read. It then settles every pending label
// and reads again: settling must change no answer.
func breakdownOf(tb testing.TB, s *storage.CounterStore, name, prefix, label string) (map[string]int64, int64) {
	tb.Helper()
	got, total := readBreakdown(tb, s, name, prefix, label)
	settleAll(tb, s)
	if again, againTotal := readBreakdown(tb, s, name, prefix, label); !maps.Equal(got, again) || againTotal != total {
		tb.Fatalf("settling changed the breakdown of %q%q by %s: %v (total %d) before, %v (total %d) after", name, prefix, label, got, total, again, againTotal)
	}
	return got, total
}

// settleAll settles every pending label of s's database, in batches of
// 7 rows so that a counter's rows are settled over several passes.
func settleAll(tb testing.TB, s *storage.CounterStore) {
	tb.Helper()
	for {
		n, err := storage.BreakdownsOf(s).Settle(context.Background(), 7)
		if err != nil {
			tb.Fatalf("Settle: %v", err)
		}
		if n < 7 {
			return
		}
	}
}

// readBreakdown is breakdownOf's read.
func readBreakdown(tb testing.TB, s *storage.CounterStore, name, prefix, label string) (map[string]int64, int64) {
	tb.Helper()
	day, _ := history.QuarterOf(at)
	c, err := storage.BreakdownsOf(s).Counts(context.Background(), name, prefix, label, day, day.AddDate(0, 0, 1))
	if err != nil {
		tb.Fatalf("Counts(%q, %q, %q): %v", name, prefix, label, err)
	}
	got := map[string]int64{}
	for v, n := range c.Values {
		if n.Sign() != 0 {
			got[v] = n.Int64()
		}
	}
	return got, c.Total.Int64()
}

// Every write path that takes labels counts them with its step, in the
// day of its commit; a step without the label counts nothing for it.
func TestLabelsCountWithTheirStepOnEveryPath(t *testing.T) {
	t.Parallel()
	forEachPath(t, func(t *testing.T, dsn string, open func(string) (*storage.CounterStore, *storage.DB)) {
		s, _ := open(dsn)
		s = labelledStore(t, s, 0)
		ctx := context.Background()
		web, shop := breakdowns.Labels{"channel": "web", "region": "EU"}, breakdowns.Labels{"channel": "shop"}
		tests := []struct {
			name    string
			counter string
			change  func() error
			want    map[string]int64 // by channel
			total   int64
		}{
			{"a lone labelled increment", "lone", func() error {
				_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "lone", By: 2, Extra: breakdowns.Of(web)}})
				return err
			}, map[string]int64{"web": 2}, 2},
			{"many counters, one labelled", "many", func() error {
				_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "many", By: 3, Extra: breakdowns.Of(shop)}, {Name: "many/other", By: 1}})
				return err
			}, map[string]int64{"shop": 3}, 3},
			{"a round's parts, each with its labels", "parts", func() error {
				_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "parts", By: 6, Parts: []counters.Part{
					{At: at, By: 1, Extra: breakdowns.Of(web)}, {At: at, By: 2, Extra: breakdowns.Of(shop)}, {At: at, By: 3}}}})
				return err
			}, map[string]int64{"web": 1, "shop": 2}, 6},
			{"negative steps", "negative", func() error {
				_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "negative", By: -4, Extra: breakdowns.Of(web)}})
				return err
			}, map[string]int64{"web": -4}, -4},
			{"batch items, a name twice", "batch", func() error {
				_, err := s.Batch(ctx, []counters.Increment{{Name: "batch", By: 4, Extra: breakdowns.Of(web)}, {Name: "batch", By: 1, Extra: breakdowns.Of(web)}, {Name: "batch", By: 7}})
				return err
			}, map[string]int64{"web": 5}, 12},
			{"an idempotent batch and its replay", "once", func() error {
				for range 2 {
					if _, _, err := s.BatchOnce(ctx, counters.Idempotency{Key: "k", Fingerprint: [32]byte{2}}, []counters.Increment{{Name: "once", By: 3, Extra: breakdowns.Of(shop)}}); err != nil {
						return err
					}
				}
				return nil
			}, map[string]int64{"shop": 3}, 3},
			{"unlabelled increments count none", "plain", func() error {
				_, err := s.Increment(ctx, "plain", 9)
				return err
			}, map[string]int64{}, 9},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if err := tt.change(); err != nil {
					t.Fatal(err)
				}
				got, total := breakdownOf(t, s, tt.counter, "", "channel")
				if !maps.Equal(got, tt.want) || total != tt.total {
					t.Fatalf("by channel %v, total %d; want %v, total %d", got, total, tt.want, tt.total)
				}
			})
		}
	})
}

// A refused step counts no label: the bound refuses the whole batch, and
// nothing of it is counted.
func TestARefusedIncrementCountsNoLabel(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	s = labelledStore(t, s, 0)
	ctx := context.Background()
	if _, _, err := s.Set(ctx, counters.SetRequest{Name: "stock", Value: 1, Min: counters.Bound{Value: int64p(0)}, Max: counters.Bound{Keep: true}}); err != nil {
		t.Fatal(err)
	}
	_, err := s.Batch(ctx, []counters.Increment{{Name: "stock", By: -1, Extra: breakdowns.Of(breakdowns.Labels{"channel": "web"})}, {Name: "stock", By: -1, Extra: breakdowns.Of(breakdowns.Labels{"channel": "web"})}})
	if counters.ErrorCode(err) != counters.EOUTOFRANGE {
		t.Fatalf("err = %v, want out_of_range", err)
	}
	_, err = s.IncrementMany(ctx, []counters.Increment{{Name: "stock", By: -2, Extra: breakdowns.Of(breakdowns.Labels{"channel": "web"})}})
	if counters.ErrorCode(err) != counters.EOUTOFRANGE {
		t.Fatalf("err = %v, want out_of_range", err)
	}
	if got, total := breakdownOf(t, s, "stock", "", "channel"); len(got) != 0 || total != 0 {
		t.Fatalf("by channel %v, total %d; want nothing", got, total)
	}
}

// Values beyond the bound count as (other), exactly, whether they come
// one by one or many in one statement, and the stored values stay at the
// bound.
func TestValuesBeyondTheBoundCountAsOther(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		perCall int
	}{
		{"one value a call", 1},
		{"seven values a call", 7},
		{"all values in one call", 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, db := mustOpenStore(t)
			s = labelledStore(t, s, 5)
			ctx := context.Background()
			for i := 0; i < 40; i += tt.perCall {
				var parts []counters.Part
				by := int64(0)
				for j := i; j < i+tt.perCall && j < 40; j++ {
					parts = append(parts, counters.Part{At: at, By: int64(j + 1), Extra: breakdowns.Of(breakdowns.Labels{"ref": fmt.Sprintf("site%02d", j)})})
					by += int64(j + 1)
				}
				if _, err := s.IncrementMany(ctx, []counters.Increment{{Name: "page", By: by, Parts: parts}}); err != nil {
					t.Fatal(err)
				}
			}
			// a value already stored stays itself
			if _, err := s.IncrementMany(ctx, []counters.Increment{{Name: "page", By: 1000, Extra: breakdowns.Of(breakdowns.Labels{"ref": "site00"})}}); err != nil {
				t.Fatal(err)
			}
			got, total := breakdownOf(t, s, "page", "", "ref") // settles: the bound is counted below
			var stored int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM counter_label WHERE name = 'page' AND value <> '(other)'").Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if stored != 5 {
				t.Fatalf("%d values stored, want the bound 5: %v", stored, got)
			}
			want := map[string]int64{"site00": 1001, "site01": 2, "site02": 3, "site03": 4, "site04": 5, breakdowns.LabelOther: 820 - 15}
			if !maps.Equal(got, want) || total != 1820 {
				t.Fatalf("by ref %v, total %d; want %v, total 1820", got, total, want)
			}
		})
	}
}

// twoProcesses opens two labelled stores on one database, each with its
// own pool, as two processes of the service would.
func twoProcesses(t *testing.T, bound int) ([]*storage.CounterStore, *storage.DB) {
	t.Helper()
	dsn := storetest.MigratedDSN(t)
	var stores []*storage.CounterStore
	var db *storage.DB
	for range 2 {
		s, d := storetest.OpenStore(t, dsn)
		stores = append(stores, labelledStore(t, s, bound))
		db = d
	}
	return stores, db
}

// Two processes (two stores, each with its own pool) writing new values of
// one counter at once still keep exactly the bound: settling decides in
// the order the counter's writes committed, which its row lock sets.
func TestTwoProcessesKeepExactlyTheBound(t *testing.T) {
	t.Parallel()
	const bound, writers, each = 10, 8, 15
	stores, db := twoProcesses(t, bound)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%2]
			for i := range each {
				parts := []counters.Part{
					{At: at, By: 1, Extra: breakdowns.Of(breakdowns.Labels{"ref": fmt.Sprintf("w%d-%d", w, i)})},
					{At: at, By: 2, Extra: breakdowns.Of(breakdowns.Labels{"ref": fmt.Sprintf("w%d-%d-b", w, i)})},
				}
				if _, err := s.IncrementMany(ctx, []counters.Increment{{Name: "page", By: 3, Parts: parts}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, total := breakdownOf(t, stores[0], "page", "", "ref") // settles
	var stored int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM counter_label WHERE name = 'page' AND value <> '(other)'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, n := range got {
		sum += n
	}
	if stored != bound || total != 3*writers*each || sum != total {
		t.Fatalf("%d values stored, rows add up to %d, total %d; want %d values and %d", stored, sum, total, bound, 3*writers*each)
	}
}

// Bounded: 20,000 distinct values at one counter keep the stored values at
// the bound (the default, 100), with every step counted.
func TestTwentyThousandValuesKeepTheBound(t *testing.T) {
	t.Parallel()
	s, db := mustOpenStore(t)
	s = labelledStore(t, s, 0)
	ctx := context.Background()
	const n, perCall = 20000, 500
	for i := 0; i < n; i += perCall {
		parts := make([]counters.Part, perCall)
		for j := range parts {
			parts[j] = counters.Part{At: at, By: 1, Extra: breakdowns.Of(breakdowns.Labels{"referrer": fmt.Sprintf("site%05d.example", i+j)})}
		}
		if _, err := s.IncrementMany(ctx, []counters.Increment{{Name: "hits/page", By: perCall, Parts: parts}}); err != nil {
			t.Fatal(err)
		}
	}
	got, total := breakdownOf(t, s, "hits/page", "", "referrer") // settles
	var stored int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM counter_label WHERE name = 'hits/page' AND value <> '(other)'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != breakdowns.DefaultLabelValues {
		t.Fatalf("%d values stored, want %d", stored, breakdowns.DefaultLabelValues)
	}
	if got[breakdowns.LabelOther] != n-breakdowns.DefaultLabelValues || total != n {
		t.Fatalf("(other) %d, total %d; want %d, %d", got[breakdowns.LabelOther], total, n-breakdowns.DefaultLabelValues, n)
	}
}

// A prefix's breakdown sums its counters' labels; by name it is each
// counter's history.
func TestPrefixBreakdownSumsItsCounters(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	s = labelledStore(t, s, 0)
	ctx := context.Background()
	for _, it := range []counters.Increment{
		{Name: "shop/a", By: 2, Extra: breakdowns.Of(breakdowns.Labels{"channel": "web"})},
		{Name: "shop/b", By: 3, Extra: breakdowns.Of(breakdowns.Labels{"channel": "web"})},
		{Name: "shop/b", By: 4, Extra: breakdowns.Of(breakdowns.Labels{"channel": "app"})},
		{Name: "shopx", By: 100, Extra: breakdowns.Of(breakdowns.Labels{"channel": "web"})},
	} {
		if _, err := s.IncrementMany(ctx, []counters.Increment{it}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Increment(ctx, "shop/c", 5); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		by    string
		want  map[string]int64
		total int64
	}{
		{"channel", map[string]int64{"web": 5, "app": 4}, 14},
		{breakdowns.ByName, map[string]int64{"shop/a": 2, "shop/b": 7, "shop/c": 5}, 14},
	}
	for _, tt := range tests {
		t.Run(tt.by, func(t *testing.T) {
			got, total := breakdownOf(t, s, "", "shop/", tt.by)
			if !maps.Equal(got, tt.want) || total != tt.total {
				t.Fatalf("got %v, total %d; want %v, total %d", got, total, tt.want, tt.total)
			}
		})
	}
}

// DELETE removes a counter's labels with it, and retention removes the
// label days before its horizon, whether the labels are still pending,
// settled, or rolled up into months.
func TestDeleteAndRetentionRemoveLabels(t *testing.T) {
	t.Parallel()
	for _, state := range []string{"pending", "settled", "rolled up"} {
		t.Run(state, func(t *testing.T) {
			s, db := mustOpenStore(t)
			s = labelledStore(t, s, 0)
			ctx := context.Background()
			old := counters.Part{At: at.AddDate(0, 0, -3), By: 1, Extra: breakdowns.Of(breakdowns.Labels{"channel": "web"})}
			for _, name := range []string{"gone", "kept"} {
				if _, err := s.IncrementMany(ctx, []counters.Increment{{Name: name, By: 2, Parts: []counters.Part{old, {At: at, By: 1, Extra: breakdowns.Of(breakdowns.Labels{"channel": "web"})}}}}); err != nil {
					t.Fatal(err)
				}
			}
			day, _ := history.QuarterOf(at)
			if state != "pending" {
				settleAll(t, s)
			}
			if state == "rolled up" {
				if _, err := storage.BreakdownsOf(s).RollupLabels(ctx, day, 100); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Delete(ctx, "gone"); err != nil {
				t.Fatal(err)
			}
			var left int
			if err := db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM counter_label WHERE name = 'gone') + (SELECT COUNT(*) FROM counter_label_pending WHERE name = 'gone')"+
				" + (SELECT COUNT(*) FROM counter_label_month WHERE name = 'gone')").Scan(&left); err != nil || left != 0 {
				t.Fatalf("%d label rows of a deleted counter (%v)", left, err)
			}
			if _, err := storage.HistoryOf(s).PurgeHistory(ctx, day, 1000); err != nil {
				t.Fatal(err)
			}
			rows, err := db.QueryContext(ctx, "SELECT name, DATE_FORMAT(day, '%Y-%m-%d') FROM counter_label UNION ALL SELECT name, DATE_FORMAT(day, '%Y-%m-%d') FROM counter_label_pending"+
				" UNION ALL SELECT name, CONCAT('month ', month) FROM counter_label_month")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var got []string
			for rows.Next() {
				var name, d string
				if err := rows.Scan(&name, &d); err != nil {
					t.Fatal(err)
				}
				got = append(got, name+" "+d)
			}
			if want := "kept " + day.Format(time.DateOnly); len(got) != 1 || got[0] != want {
				t.Fatalf("label rows %v, want [%s]", got, want)
			}
			if got, _ := breakdownOf(t, s, "kept", "", "channel"); got["web"] != 1 {
				t.Fatalf("kept's channels %v, want web 1", got)
			}
		})
	}
}

// Settling passes that run while two processes write new values and a
// reader reads change no answer: every read adds up to its history, no
// value's count ever goes down (a value kept as itself stays itself), and
// once all is settled the day holds exactly the bound.
func TestSettlingMeanwhileChangesNoAnswer(t *testing.T) {
	t.Parallel()
	const bound, writers, each = 10, 6, 40
	stores, db := twoProcesses(t, bound)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var writing, background sync.WaitGroup
	errs := make(chan error, writers+2)
	for w := range writers {
		writing.Add(1)
		go func() {
			defer writing.Done()
			for i := range each {
				ref := fmt.Sprintf("site%02d", (w*7+i*3)%30)
				if _, err := stores[w%2].IncrementMany(ctx, []counters.Increment{{Name: "page", By: 1, Extra: breakdowns.Of(breakdowns.Labels{"ref": ref})}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	background.Add(2)
	go func() { // a settler of each process, in small batches
		defer background.Done()
		for ctx.Err() == nil {
			if _, err := storage.BreakdownsOf(stores[len(errs)%2]).Settle(ctx, 3); err != nil && ctx.Err() == nil {
				errs <- err
				return
			}
		}
	}()
	go func() {
		defer background.Done()
		last := map[string]int64{}
		day, _ := history.QuarterOf(at)
		for ctx.Err() == nil {
			c, err := storage.BreakdownsOf(stores[1]).Counts(ctx, "page", "", "ref", day, day.AddDate(0, 0, 1))
			if err != nil {
				if ctx.Err() == nil && counters.ErrorCode(err) != counters.ENOTFOUND {
					errs <- err
					return
				}
				continue
			}
			got, sum, total := map[string]int64{}, int64(0), c.Total.Int64()
			for v, n := range c.Values {
				got[v] = n.Int64()
				sum += n.Int64()
				if n.Int64() < last[v] {
					errs <- fmt.Errorf("%s went down from %d to %d", v, last[v], n)
					return
				}
			}
			if sum != total {
				errs <- fmt.Errorf("rows add up to %d, history %d: %v", sum, total, got)
				return
			}
			last = got
		}
	}()
	writing.Wait()
	cancel()
	background.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, total := breakdownOf(t, stores[0], "page", "", "ref")
	var stored int
	if err := db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM counter_label WHERE name = 'page' AND value <> '(other)'").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != bound || total != writers*each || got[breakdowns.LabelOther] == 0 {
		t.Fatalf("%d values stored, total %d, %v; want %d values, total %d and some (other)", stored, total, got, bound, writers*each)
	}
}

// A round of the current quarter hour appends its labels to its counter's
// label slot; a round the slot refuses (full, or holding another day) and
// any other labelled write move the slot out before their own labels. The
// bound is decided in the order the writes committed whichever way each
// went: the breakdown of each day is what a reference that applies the
// writes one by one says, before settling and after.
func TestLabelSlotsKeepTheOrderOfTheWrites(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 30} {
		t.Run(fmt.Sprintf("slot of %d bytes", size), func(t *testing.T) {
			s, db := mustOpenStore(t)
			s = labelledStore(t, s, 3)
			storage.SetLabelSlot(s, size)
			clock := testenv.NewClock(at)
			s.Now = clock.Now
			ctx := context.Background()
			day1, _ := history.QuarterOf(at)
			day2 := day1.AddDate(0, 0, 1)
			want := map[time.Time]map[string]int64{day1: {}, day2: {}}
			kept := map[time.Time]map[string]bool{day1: {}, day2: {}}
			slotUsed := false
			write := func(i int, day time.Time, inc counters.Increment) {
				t.Helper()
				if _, err := s.IncrementMany(ctx, []counters.Increment{inc}); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
				v := fmt.Sprintf("site%d", (i*5)%9)
				if !kept[day][v] && len(kept[day]) < 3 {
					kept[day][v] = true
				}
				if !kept[day][v] {
					v = breakdowns.LabelOther
				}
				want[day][v] += inc.By
				var used bool
				if err := db.QueryRowContext(ctx, "SELECT label_slot IS NOT NULL FROM counter WHERE name = 'page'").Scan(&used); err != nil {
					t.Fatal(err)
				}
				slotUsed = slotUsed || used
			}
			for i := range 24 {
				ref := breakdowns.Labels{"ref": fmt.Sprintf("site%d", (i*5)%9)}
				switch {
				case i == 16:
					clock.Set(at.Add(24 * time.Hour)) // the slot holds yesterday
					fallthrough
				case i > 16:
					write(i, day2, counters.Increment{Name: "page", By: int64(i + 1), Extra: breakdowns.Of(ref)})
				case i%5 == 4: // a part that queued an hour before: the transactional way
					write(i, day1, counters.Increment{Name: "page", By: int64(i + 1), Parts: []counters.Part{{At: at.Add(-time.Hour), By: int64(i + 1), Extra: breakdowns.Of(ref)}}})
				default:
					write(i, day1, counters.Increment{Name: "page", By: int64(i + 1), Extra: breakdowns.Of(ref)})
				}
			}
			if !slotUsed {
				t.Fatal("no write used the label slot")
			}
			for _, day := range []time.Time{day1, day2} {
				c, err := storage.BreakdownsOf(s).Counts(ctx, "page", "", "ref", day, day.AddDate(0, 0, 1))
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]int64{}
				for v, n := range c.Values {
					got[v] = n.Int64()
				}
				settleAll(t, s)
				c2, err := storage.BreakdownsOf(s).Counts(ctx, "page", "", "ref", day, day.AddDate(0, 0, 1))
				if err != nil {
					t.Fatal(err)
				}
				for v, n := range c2.Values {
					if got[v] != n.Int64() {
						t.Fatalf("%s: settling changed %s from %d to %d", day.Format(time.DateOnly), v, got[v], n.Int64())
					}
				}
				if !maps.Equal(got, want[day]) {
					t.Fatalf("%s: by ref %v, want %v", day.Format(time.DateOnly), got, want[day])
				}
			}
		})
	}
}

// Label days rolled up into month rows answer every range as their daily
// rows did, across a month's turn, for a counter and a prefix; retention
// then trims the days before its horizon from the month that holds it.
func TestRolledUpLabelsAnswerAsDailyRows(t *testing.T) {
	t.Parallel()
	s, db := mustOpenStore(t)
	s = labelledStore(t, s, 3)
	ctx := context.Background()
	day := func(s string) time.Time { return mustParseDay(t, s) }
	days := []string{"2025-03-30", "2025-03-31", "2025-04-01", "2025-04-02", "2025-04-16", "2025-04-17"}
	for i, d := range days {
		for j, name := range []string{"rl/a", "rl/b"} {
			var parts []counters.Part
			for k := range 4 {
				parts = append(parts, counters.Part{At: day(d).Add(time.Hour), By: int64(i + j + k + 1), Extra: breakdowns.Of(breakdowns.Labels{"ref": fmt.Sprintf("site%d", (i+k)%5)})})
			}
			var by int64
			for _, p := range parts {
				by += p.By
			}
			if _, err := s.IncrementMany(ctx, []counters.Increment{{Name: name, By: by, Parts: parts}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	settleAll(t, s)
	ranges := [][2]string{{"2025-03-30", "2025-04-18"}, {"2025-03-31", "2025-04-02"}, {"2025-04-01", "2025-04-17"}, {"2025-04-02", "2025-04-03"}, {"2025-04-17", "2025-04-18"}}
	read := func() map[string]map[string]int64 {
		out := map[string]map[string]int64{}
		for _, r := range ranges {
			for _, q := range [][2]string{{"rl/a", ""}, {"", "rl/"}} {
				c, err := storage.BreakdownsOf(s).Counts(ctx, q[0], q[1], "ref", day(r[0]), day(r[1]))
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]int64{"total": c.Total.Int64()}
				for v, n := range c.Values {
					got[v] = n.Int64()
				}
				out[r[0]+" "+r[1]+" "+q[0]+q[1]] = got
			}
		}
		return out
	}
	before := read()
	for {
		n, err := storage.BreakdownsOf(s).RollupLabels(ctx, day("2025-04-17"), 3)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	var daily, months int
	if err := db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM counter_label WHERE day < '2025-04-17'), (SELECT COUNT(*) FROM counter_label_month)").Scan(&daily, &months); err != nil {
		t.Fatal(err)
	}
	if daily != 0 || months == 0 {
		t.Fatalf("%d daily rows before 17 April and %d month rows after the roll-up; want none and some", daily, months)
	}
	after := read()
	for k, want := range before {
		if !maps.Equal(after[k], want) {
			t.Errorf("%s: %v rolled up, %v daily", k, after[k], want)
		}
	}
	if _, err := storage.HistoryOf(s).PurgeHistory(ctx, day("2025-04-02"), 1000); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM counter_label_month WHERE month < '2025-04-01' OR first_day < 1").Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d month rows hold days before the horizon", left)
	}
	kept := read()
	for _, k := range []string{"2025-04-02 2025-04-03 rl/a", "2025-04-17 2025-04-18 rl/", "2025-04-02 2025-04-03 rl/"} {
		if !maps.Equal(kept[k], before[k]) {
			t.Errorf("%s after retention: %v, want %v", k, kept[k], before[k])
		}
	}
}

func mustParseDay(t *testing.T, s string) time.Time {
	t.Helper()
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
