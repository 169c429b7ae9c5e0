package storage_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
)

// rawStep is one step of a counter at a quarter hour: what every answer is
// held to.
type rawStep struct {
	name string
	at   time.Time
	by   int64
}

// rawSteps makes steps for names on the days in [first, last), in most
// quarter hours of each (the pattern leaves gaps and has negative steps),
// each name with its own figures.
func rawSteps(names []string, first, last time.Time) []rawStep {
	var steps []rawStep
	for i, name := range names {
		n := 0
		for d := first; d.Before(last); d = d.AddDate(0, 0, 1) {
			n++
			for q := range history.QuartersPerDay {
				if (n*7+q*5+i)%3 == 0 {
					continue
				}
				by := int64((q*13+n*7+i*31)%100 + 1)
				if q%17 == 0 {
					by = -by
				}
				steps = append(steps, rawStep{name, d.Add(time.Duration(q)*counters.HistoryGrain + time.Duration(i)*time.Minute), by})
			}
		}
	}
	return steps
}

// writeSteps commits steps through the store, each at its own time (one
// IncrementMany per counter and day).
func writeSteps(tb testing.TB, s *storage.CounterStore, steps []rawStep) {
	tb.Helper()
	for len(steps) > 0 {
		n := 0
		day, _ := history.QuarterOf(steps[0].at)
		inc := counters.Increment{Name: steps[0].name}
		for ; n < len(steps) && steps[n].name == inc.Name; n++ {
			if d, _ := history.QuarterOf(steps[n].at); !d.Equal(day) {
				break
			}
			inc.By += steps[n].by
			inc.Parts = append(inc.Parts, counters.Part{At: steps[n].at, By: steps[n].by})
		}
		if _, err := s.IncrementMany(context.Background(), []counters.Increment{inc}); err != nil {
			tb.Fatal(err)
		}
		steps = steps[n:]
	}
}

// answer is a history's answer: each point's start and count.
type answer map[string]int64

// ask answers r from the store, and what the raw steps say it must be:
// each point the sum of the steps in [its start, the next one's).
func ask(tb testing.TB, svc *history.Service, r history.Request, steps []rawStep) (got, want answer) {
	tb.Helper()
	q, err := svc.Parse(r)
	if err != nil {
		tb.Fatal(err)
	}
	series, err := svc.Series(context.Background(), q)
	if err != nil {
		tb.Fatalf("%+v: %v", r, err)
	}
	got, want = answer{}, answer{}
	for i, p := range series.Points {
		end := q.To
		if i+1 < len(series.Points) {
			end = series.Points[i+1].Start
		}
		key := p.Start.Format(time.RFC3339)
		got[key] = p.Count
		want[key] = 0
		for _, st := range steps {
			if (st.name == r.Name || r.Name == "" && len(st.name) >= len(r.Prefix) && st.name[:len(r.Prefix)] == r.Prefix) &&
				!st.at.Before(p.Start) && st.at.Before(end) {
				want[key] += st.by
			}
		}
	}
	return got, want
}

func sameAnswer(a, b answer) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func rollup(tb testing.TB, hs *storage.HistoryStore, now time.Time) {
	tb.Helper()
	r := &history.Rollup{Store: hs, Now: func() time.Time { return now }, Batch: 100, Share: 1, Pause: time.Millisecond}
	if _, err := r.Pass(context.Background()); err != nil {
		tb.Fatal(err)
	}
}

// Days and months in the zones whose midnights fall on :30 and :45 (and
// Lord Howe's half-hour DST change, St John's and Chatham's hour ones, all
// inside the range) answer the sum of the raw steps before a roll-up,
// after one that keeps the last 37 days whole (hours included, across
// Lord Howe's change on 6 April), and after the days have been thinned to
// the zones' boundaries; for one counter and for a prefix.
func TestRolledUpHistoryAnswersEveryZoneAsItsRawSteps(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	first, last := time.Date(2025, 2, 25, 0, 0, 0, 0, time.UTC), time.Date(2025, 5, 6, 0, 0, 0, 0, time.UTC)
	now := time.Date(2025, 5, 5, 12, 0, 0, 0, time.UTC)
	clock := testenv.NewClock(now)
	s.Now = clock.Now
	steps := rawSteps([]string{"z/a", "z/b"}, first, last)
	writeSteps(t, s, steps)
	hs := storage.HistoryOf(s)
	svc := history.NewService(hs, clock.Now)

	zones := []string{"Asia/Kolkata", "Asia/Kathmandu", "Australia/Lord_Howe", "America/St_Johns", "Pacific/Chatham"}
	queries := []struct {
		name string
		r    history.Request
		// whole says the answer is promised only while the days keep
		// their quarter hours (hours, 35 days back).
		whole bool
	}{
		{"a counter by day", history.Request{Name: "z/a", Step: "day", From: "2025-03-01", To: "2025-05-05"}, false},
		{"a prefix by day", history.Request{Prefix: "z/", Step: "day", From: "2025-03-01", To: "2025-05-05"}, false},
		{"a counter by month", history.Request{Name: "z/a", Step: "month", From: "2025-03", To: "2025-05"}, false},
		{"a prefix by month", history.Request{Prefix: "z/", Step: "month", From: "2025-03", To: "2025-06"}, false},
		{"a counter by hour", history.Request{Name: "z/b", Step: "hour", From: "2025-04-04", To: "2025-04-08"}, true},
	}
	stages := []struct {
		name   string
		rollup time.Time // zero: none
		whole  bool      // the days asked by hour keep their quarter hours
	}{
		{"before a roll-up", time.Time{}, true},
		{"rolled up, the last 37 days whole", now, true},
		{"thinned to the zones' boundaries", time.Date(2025, 7, 1, 0, 0, 0, 0, time.UTC), false},
	}
	for _, st := range stages {
		if !st.rollup.IsZero() {
			rollup(t, hs, st.rollup)
		}
		for _, zone := range zones {
			for _, q := range queries {
				if q.whole && !st.whole {
					continue
				}
				t.Run(st.name+"/"+zone+"/"+q.name, func(t *testing.T) {
					r := q.r
					r.Zone = zone
					if got, want := ask(t, svc, r, steps); !sameAnswer(got, want) {
						t.Errorf("got %v\nwant %v", got, want)
					}
				})
			}
		}
	}
}

// A roll-up killed part-way (MySQL killed under it, batch after batch in
// flight) and run again changes no answer: each batch moves its days in
// one transaction, and reads take both forms from one snapshot.
func TestARollupKilledPartWayAndRerunChangesNoAnswer(t *testing.T) {
	t.Parallel()
	m := testenv.StartMariaDB(t)
	s, db := storetest.OpenStore(t, m.DSN("rollup"))
	first, last := time.Date(2025, 1, 20, 0, 0, 0, 0, time.UTC), time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC)
	now := time.Date(2025, 4, 1, 0, 0, 0, 0, time.UTC)
	s.Now = testenv.NewClock(now).Now
	names := []string{"k/a", "k/b", "k/c", "k/d", "k/e", "k/f"}
	steps := rawSteps(names, first, last)
	writeSteps(t, s, steps)
	hs := storage.HistoryOf(s)
	svc := history.NewService(hs, s.Now)
	requests := []history.Request{
		{Prefix: "k/", Step: "day", Zone: "Asia/Kolkata", From: "2025-01-20", To: "2025-03-10"},
		{Prefix: "k/", Step: "month", Zone: "America/St_Johns", From: "2025-01", To: "2025-04"},
		{Name: "k/c", Step: "day", Zone: "Pacific/Chatham", From: "2025-01-20", To: "2025-03-10"},
	}
	check := func(when string) {
		t.Helper()
		for _, r := range requests {
			if got, want := ask(t, svc, r, steps); !sameAnswer(got, want) {
				t.Fatalf("%s, %+v: got %v\nwant %v", when, r, got, want)
			}
		}
	}
	check("before the roll-up")

	r := &history.Rollup{Store: hs, Now: s.Now, Batch: 3, Share: 1, Pause: time.Millisecond}
	done := make(chan error, 1)
	go func() { _, err := r.Pass(context.Background()); done <- err }()
	for months := 0; months < 3; {
		select {
		case err := <-done:
			t.Fatalf("the roll-up ended before the kill: %v", err)
		default:
		}
		if err := db.QueryRow("SELECT COUNT(*) FROM counter_history_month").Scan(&months); err != nil {
			t.Fatal(err)
		}
	}
	m.Kill()
	if err := <-done; err == nil {
		t.Fatal("the roll-up went on with MySQL killed")
	}
	m.Start(t)
	check("after the kill")
	var left int
	if err := db.QueryRow("SELECT COUNT(*) FROM counter_history").Scan(&left); err != nil || left == 0 {
		t.Fatalf("%d days left to roll up (%v): the kill came too late to test anything", left, err)
	}
	r.Batch = 100
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	check("after the rerun")
	if err := db.QueryRow("SELECT COUNT(*) FROM counter_history").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d days left in counter_history after the rerun (%v), want 0", left, err)
	}
}

// historyRows counts name's stored history in every form.
func historyRows(tb testing.TB, db *storage.DB, name string) (days, months int) {
	tb.Helper()
	for q, n := range map[string]*int{"SELECT COUNT(*) FROM counter_history WHERE name = ?": &days, "SELECT COUNT(*) FROM counter_history_month WHERE name = ?": &months} {
		if err := db.QueryRow(q, name).Scan(n); err != nil {
			tb.Fatal(err)
		}
	}
	return days, months
}

// DELETE removes a counter's history in every form: its days, its
// rolled-up months, its slot.
func TestDeleteRemovesRolledUpHistory(t *testing.T) {
	t.Parallel()
	s, db := mustOpenStore(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s.Now = testenv.NewClock(now).Now
	writeSteps(t, s, rawSteps([]string{"gone"}, now.AddDate(0, 0, -60), now))
	if _, err := s.Increment(context.Background(), "gone", 1); err != nil {
		t.Fatal(err)
	}
	rollup(t, storage.HistoryOf(s), now)
	if _, months := historyRows(t, db, "gone"); months == 0 {
		t.Fatal("nothing was rolled up")
	}
	if err := s.Delete(context.Background(), "gone"); err != nil {
		t.Fatal(err)
	}
	if days, months := historyRows(t, db, "gone"); days != 0 || months != 0 {
		t.Fatalf("after DELETE: %d days and %d months of history left", days, months)
	}
	_, err := storage.HistoryOf(s).HistoryDays(context.Background(), "gone", "", now.AddDate(0, 0, -60), now.AddDate(0, 0, 1))
	if code := counters.ErrorCode(err); code != counters.ENOTFOUND {
		t.Fatalf("history of a deleted counter: %v, want ENOTFOUND", err)
	}
}

// Retention removes rolled-up days before its horizon: the months that
// end by then whole, and the days before it of the month that holds it;
// the days from the horizon on answer as before.
func TestRetentionRemovesRolledUpDaysBeforeTheHorizon(t *testing.T) {
	t.Parallel()
	s, db := mustOpenStore(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	clock := testenv.NewClock(now)
	s.Now = clock.Now
	steps := rawSteps([]string{"kept/a"}, time.Date(2025, 2, 20, 0, 0, 0, 0, time.UTC), time.Date(2025, 4, 20, 0, 0, 0, 0, time.UTC))
	writeSteps(t, s, steps)
	hs := storage.HistoryOf(s)
	rollup(t, hs, now)
	horizon := time.Date(2025, 3, 10, 0, 0, 0, 0, time.UTC)
	r := &history.Retention{Store: hs, Age: now.Sub(horizon), Now: clock.Now, Batch: 1, Pause: time.Millisecond}
	if _, err := r.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	var months []string
	rows, err := db.Query("SELECT month, first_day FROM counter_history_month WHERE name = 'kept/a' ORDER BY month")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var month, firstDay sql.NullTime
		if err := rows.Scan(&month, &firstDay); err != nil {
			t.Fatal(err)
		}
		months = append(months, month.Time.Format(time.DateOnly)+" from "+firstDay.Time.Format(time.DateOnly))
	}
	if got, want := len(months), 2; got != want || months[0] != "2025-03-01 from 2025-03-10" {
		t.Fatalf("months left: %v, want March from the 10th and April", months)
	}
	var kept []rawStep
	for _, st := range steps {
		if !st.at.Before(horizon) {
			kept = append(kept, st)
		}
	}
	svc := history.NewService(hs, clock.Now)
	if got, want := ask(t, svc, history.Request{Name: "kept/a", Step: "day", From: "2025-02-20", To: "2025-04-20"}, kept); !sameAnswer(got, want) {
		t.Fatalf("got %v\nwant %v", got, want)
	}
}

// A breakdown's rows still add up to the history's total once the days
// have been rolled up: by counter (each counter's own total) and by a label
// no step carried (all of it "(none)", the total itself).
func TestBreakdownsAddUpToRolledUpHistory(t *testing.T) {
	t.Parallel()
	s, _ := mustOpenStore(t)
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s.Now = testenv.NewClock(now).Now
	names := []string{"bd/a", "bd/b", "bd/c"}
	first := now.AddDate(0, 0, -70)
	steps := rawSteps(names, first, now.AddDate(0, 0, -1))
	writeSteps(t, s, steps)
	want := map[string]int64{}
	var total int64
	for _, st := range steps {
		want[st.name] += st.by
		total += st.by
	}
	for _, stage := range []string{"before the roll-up", "after it"} {
		if stage == "after it" {
			rollup(t, storage.HistoryOf(s), now)
		}
		// Breakdowns ask for whole UTC days.
		from, to := first.Truncate(24*time.Hour), now.Truncate(24*time.Hour).AddDate(0, 0, 1)
		byName, err := storage.BreakdownsOf(s).Counts(context.Background(), "", "bd/", "name", from, to)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if got := byName.Values[n]; got == nil || got.Int64() != want[n] {
				t.Fatalf("%s: by name, %s counts %v, want %d", stage, n, got, want[n])
			}
		}
		if byName.Total.Int64() != total {
			t.Fatalf("%s: by name, total %v, want %d", stage, byName.Total, total)
		}
		byLabel, err := storage.BreakdownsOf(s).Counts(context.Background(), "", "bd/", "channel", from, to)
		if err != nil {
			t.Fatal(err)
		}
		if byLabel.Total.Int64() != total || len(byLabel.Values) != 0 {
			t.Fatalf("%s: by an unused label, total %v and values %v, want %d and none", stage, byLabel.Total, byLabel.Values, total)
		}
	}
}
