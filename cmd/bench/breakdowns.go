package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/storage"
)

// The breakdowns scenario: what labels cost increments (the same loads
// against an instance with COUNTERS_BREAKDOWNS=false, which drops labels,
// alternating), and how fast a 30-day breakdown of a 1,000-counter prefix
// is read from a table seeded with a month of history and labels.
const (
	breakdownPrefix   = "bench/b/" // the seeded counters: bench/b/000 to bench/b/999
	breakdownCounters = 1000
	breakdownDays     = 30
	breakdownFirstDay = "2025-03-01"
	breakdownConns    = 4
	// The labelled hot counter carries 8 labels, as a page hit will.
	labelledHotPath = "/v1/counters/bench%2Fbd-labelled/increment"
	plainHotPath    = "/v1/counters/bench%2Fbd-plain/increment"
)

// Targets of the breakdowns scenario.
const (
	labelledTarget   = 0.85
	unlabelledTarget = 0.97
	breakdownP50     = 100 * time.Millisecond
)

type breakdownsResult struct {
	labelled, labelledOff, plain, plainOff load
	prefix, prefixByName                   load // reads, the days rolled up
	prefixWritten, prefixByNameWritten     load // the same before the roll-up
	labelRows                              int64
}

// labelledScript POSTs increments with 8 labels whose values vary as a
// page's hits do (20 referrers, 10 countries, ...).
const labelledScript = seedScript + `init = function(args)
  seed()
end
local refs, countries = {}, {}
for i = 1, 20 do refs[i] = "site" .. i .. ".example" end
for i = 1, 10 do countries[i] = "C" .. i end
local pick = function(t) return t[math.random(#t)] end
request = function()
  local body = string.format('{"labels": {"referrer": "%s", "country": "%s", "browser": "%s", "os": "%s", "device": "%s", "source": "%s", "medium": "%s", "campaign": "%s"}}',
    pick(refs), pick(countries), pick({"Chrome", "Firefox", "Safari", "Edge", "Opera"}), pick({"Windows", "macOS", "Linux", "Android"}),
    pick({"desktop", "mobile", "tablet"}), pick({"(none)", "newsletter", "twitter", "hn", "reddit"}), pick({"(none)", "email", "social"}),
    pick({"(none)", "launch", "spring", "black-friday", "summer"}))
  return wrk.format("POST", nil, {["Content-Type"] = "application/json"}, body)
end`

func (b *bench) breakdowns() error {
	off := *b.urls["nobreakdowns"]
	db, err := sql.Open("mysql", b.serviceDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	// Unlabelled increments first, on a database that labelled ones have
	// not yet left work to (settling, InnoDB's purge of what settling
	// deleted): the pair compares the instances, not their places in the
	// order.
	plain := []measure{
		b.wrk("hot counter, no labels", b.url+plainHotPath, targetConns, postScript),
		b.wrk("hot counter, no labels, breakdowns off", off+plainHotPath, targetConns, postScript),
	}
	labelled := []measure{
		settled(db, b.wrk("hot counter, 8 labels", b.url+labelledHotPath, targetConns, labelledScript)),
		settled(db, b.wrk("hot counter, 8 labels, breakdowns off", off+labelledHotPath, targetConns, labelledScript)),
	}
	r := &breakdownsResult{}
	for _, pair := range []struct {
		ms      []measure
		on, off *load
	}{{plain, &r.plain, &r.plainOff}, {labelled, &r.labelled, &r.labelledOff}} {
		if err := b.warm(pair.ms...); err != nil {
			return err
		}
		rs, err := b.compare(pair.ms...)
		if err != nil {
			return err
		}
		*pair.on, *pair.off = rs[0].byRPS(), rs[1].byRPS()
	}

	if err := b.seedBreakdowns(r); err != nil {
		return err
	}
	// The same reads twice: first with the seeded history as increments
	// write it (counter_history, as in the hour before the roll-up's next
	// pass), then rolled up, as the service keeps days before today. The
	// labels of days before yesterday are rolled up within a second by the
	// service's settling job: seedBreakdowns waits for that.
	if r.prefixWritten, r.prefixByNameWritten, err = b.breakdownReads("as written"); err != nil {
		return err
	}
	if err := b.rollupBreakdowns(); err != nil {
		return err
	}
	if r.prefix, r.prefixByName, err = b.breakdownReads("rolled up"); err != nil {
		return err
	}
	b.r.breakdowns = r
	return nil
}

// settled is m followed, outside its time, by waiting until the labels it
// left pending are settled: the service settles them a second at a time,
// and a run's last second would otherwise be settled during the next
// run, which the alternation makes a run of the other instance or of
// unlabelled increments.
func settled(db *sql.DB, m measure) measure {
	return measure{m.name, func(d time.Duration) (load, error) {
		l, err := m.run(d)
		if err != nil {
			return l, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for {
			var pending int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM counter_label_pending").Scan(&pending); err != nil {
				return l, fmt.Errorf("waiting for labels to settle: %w", err)
			}
			if pending == 0 {
				return l, nil
			}
			time.Sleep(100 * time.Millisecond)
		}
	}}
}

// breakdownReads measures the 30-day breakdowns of the seeded prefix by a
// label and by name, alternating, p50 first.
func (b *bench) breakdownReads(state string) (byLabel, byName load, err error) {
	to := mustDay(breakdownFirstDay).AddDate(0, 0, breakdownDays).Format(time.DateOnly)
	label := b.wrk("breakdown: 1,000 counters by channel, 30 days, "+state, b.url, breakdownConns, historyReadScript(
		fmt.Sprintf(`"/v1/breakdown?prefix=%s&by=channel&from=%s&to=%s"`, breakdownPrefix, breakdownFirstDay, to)))
	name := b.wrk("breakdown: 1,000 counters by name, 30 days, "+state, b.url, breakdownConns, historyReadScript(
		fmt.Sprintf(`"/v1/breakdown?prefix=%s&by=name&from=%s&to=%s"`, breakdownPrefix, breakdownFirstDay, to)))
	if err := b.warm(label, name); err != nil {
		return load{}, load{}, err
	}
	reads, err := b.compare(label, name)
	if err != nil {
		return load{}, load{}, err
	}
	return reads[0].byP50(), reads[1].byP50(), nil
}

// rollupBreakdowns rolls the seeded days up as the service's hourly pass
// does (history.Rollup), without its rests.
func (b *bench) rollupBreakdowns() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	db, err := storage.Open(ctx, b.serviceDSN, storage.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := rollUpHistory(ctx, db)
	if err != nil {
		return err
	}
	logf("rolled up %d days", n)
	return nil
}

// rollupLabels rolls the seeded label days up as the service's settling
// job does within a second of their writing (breakdowns.Settling), so
// that the reads find the state the service keeps, not one in flux.
func rollupLabels(ctx context.Context, dsn string) error {
	db, err := storage.Open(ctx, dsn, storage.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	store := storage.NewBreakdownStore(db)
	yesterday := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	for {
		n, err := store.RollupLabels(ctx, yesterday, breakdowns.DefaultSettleBatch)
		if err != nil {
			return fmt.Errorf("rolling up labels: %w", err)
		}
		if n < breakdowns.DefaultSettleBatch {
			return nil
		}
	}
}

func mustDay(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// seedBreakdowns writes a month of history (8 quarters a day) and of
// labels (3 channels a day, their counts adding up to a part of the day's
// count) for 1,000 counters straight into the service's database.
func (b *bench) seedBreakdowns(r *breakdownsResult) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	db, err := sql.Open("mysql", b.serviceDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	start := time.Now()
	logf("seeding %d counters x %d days of history and labels", breakdownCounters, breakdownDays)
	names := fmt.Sprintf("seq_0_to_%d", breakdownCounters-1)
	days := fmt.Sprintf("seq_0_to_%d", breakdownDays-1)
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO counter (name, value, created_at, updated_at)
			SELECT CONCAT('%s', LPAD(seq, 3, '0')), 0, NOW(6), NOW(6) FROM %s ON DUPLICATE KEY UPDATE name = name`, breakdownPrefix, names),
		// IGNORE: rows left by an earlier run of the scenario stay.
		fmt.Sprintf(`INSERT IGNORE INTO counter_history (name, day, q0, q12, q24, q36, q48, q60, q72, q84)
			SELECT CONCAT('%s', LPAD(c.seq, 3, '0')), DATE('%s') + INTERVAL d.seq DAY, 1, 2, 3, 4, 5, 6, 7, 8 FROM %s c JOIN %s d`,
			breakdownPrefix, breakdownFirstDay, names, days),
		fmt.Sprintf(`INSERT IGNORE INTO counter_label (name, label, day, value, count)
			SELECT CONCAT('%s', LPAD(c.seq, 3, '0')), 'channel', DATE('%s') + INTERVAL d.seq DAY, ELT(v.seq + 1, 'web', 'store', 'app'), v.seq + 5
			FROM %s c JOIN %s d JOIN seq_0_to_2 v`, breakdownPrefix, breakdownFirstDay, names, days),
		"ANALYZE TABLE counter_label",
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("seeding breakdowns: %w", err)
		}
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM counter_label WHERE name LIKE 'bench/b/%'").Scan(&r.labelRows); err != nil {
		return err
	}
	logf("seeded in %s", time.Since(start).Round(time.Second))
	return rollupLabels(ctx, b.serviceDSN)
}

// rows are the figures of the breakdowns scenario against their targets.
func (r *breakdownsResult) summary(row func(name, measured, target string, ok bool)) {
	row(fmt.Sprintf("hot counter, %d conns, 8 labels: breakdowns on %s/s over off %s/s", targetConns, num(r.labelled.RPS), num(r.labelledOff.RPS)),
		ratio(r.labelled.RPS, r.labelledOff.RPS), fmt.Sprintf(">= %.2fx", labelledTarget), r.labelled.RPS >= labelledTarget*r.labelledOff.RPS)
	row(fmt.Sprintf("hot counter, %d conns, no labels: breakdowns on %s/s over off %s/s", targetConns, num(r.plain.RPS), num(r.plainOff.RPS)),
		ratio(r.plain.RPS, r.plainOff.RPS), fmt.Sprintf(">= %.2fx", unlabelledTarget), r.plain.RPS >= unlabelledTarget*r.plainOff.RPS)
	row(fmt.Sprintf("breakdown of 1,000 counters (a prefix) by channel over 30 days (%s label days, rolled up), history rolled up as the service keeps it, %d conns: %s/s",
		num(float64(r.labelRows)), breakdownConns, num(r.prefix.RPS)),
		"p50 "+dur(r.prefix.P50), "<= "+dur(breakdownP50), r.prefix.P50 <= breakdownP50)
	row(fmt.Sprintf("the same by name, %d conns: p50 %s, %s/s", breakdownConns, dur(r.prefixByName.P50), num(r.prefixByName.RPS)),
		"p99 "+dur(r.prefixByName.P99), "", true)
	row(fmt.Sprintf("the same before history's hourly roll-up (30 days in counter_history, labels rolled up), by channel %s/s, by name p50 %s", num(r.prefixWritten.RPS), dur(r.prefixByNameWritten.P50)),
		"p50 "+dur(r.prefixWritten.P50), "<= "+dur(breakdownP50), r.prefixWritten.P50 <= breakdownP50)
}

func (r *breakdownsResult) loads() []load {
	return []load{r.labelled, r.labelledOff, r.plain, r.plainOff, r.prefixWritten, r.prefixByNameWritten, r.prefix, r.prefixByName}
}
