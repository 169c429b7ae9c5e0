package main

import (
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/storage"
	"github.com/go-sql-driver/mysql"

	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// The history scenario: what writing history costs increments (the same
// loads against an instance with COUNTERS_HISTORY=false, alternating), and
// how fast history is read from a table seeded with a year of it.
const (
	historyPrefix   = "bench/h/" // the seeded counters: bench/h/0000 to bench/h/9999
	historyCounters = 10000
	historyDays     = 365
	historyFirstDay = "2025-01-01"
	// historyQuarters is how many quarter hours of each seeded day hold a
	// count: a counter seen in 8 of the day's 96.
	historyQuarters  = 8
	historyReadConns = 4
)

type historyResult struct {
	hotOn, hotOff, uniformOn, uniformOff load
	year, prefix, months                 load // reads, after the roll-up
	rows, dataBytes, indexBytes          int64
	// The seeded year after the roll-up: how long it took, and the
	// history tables' data and indexes then.
	rollupTime  time.Duration
	rolledBytes int64
	// What a counter's year costs at each activity level (historyLevels).
	perCounter []int64
	// The hot counter alone and with a retention pass beside it, and what
	// the passes removed meanwhile.
	hotAlone, hotRetention load
	retained               int64
}

func (b *bench) history() error {
	off := *b.urls["nohistory"]
	uniform := uniformScript("POST", uniformPrefix, "/increment", uniformCounters)
	ms := []measure{
		b.wrk("hot counter", b.url+hotPath, targetConns, postScript),
		b.wrk("hot counter, history off", off+hotPath, targetConns, postScript),
		b.wrk("1,000 counters", b.url, targetConns, uniform),
		b.wrk("1,000 counters, history off", off, targetConns, uniform),
	}
	if err := b.warm(ms...); err != nil {
		return err
	}
	rs, err := b.compare(ms...)
	if err != nil {
		return err
	}
	r := &historyResult{hotOn: rs[0].byRPS(), hotOff: rs[1].byRPS(), uniformOn: rs[2].byRPS(), uniformOff: rs[3].byRPS()}

	if err := b.seedHistory(r); err != nil {
		return err
	}
	if err := b.rollupSeeded(r); err != nil {
		return err
	}
	year := b.wrk("history: one counter, a year of days", b.url, historyReadConns, historyReadScript(
		`string.format("/v1/counters/bench%%2Fh%%2F%04d/history?step=day&from=2025-01-01&to=2026-01-01", math.random(0, 9999))`))
	prefix := b.wrk("history: 1,000 counters, 30 days", b.url, historyReadConns, historyReadScript(
		`string.format("/v1/history?prefix=bench/h/%d&step=day&from=2025-06-01&to=2025-07-01", math.random(0, 9))`))
	months := b.wrk("history: 1,000 counters, a year of months", b.url, historyReadConns, historyReadScript(
		`string.format("/v1/history?prefix=bench/h/%d&step=month&from=2025-01&to=2026-01&tz=Asia/Kolkata", math.random(0, 9))`))
	if err := b.warm(year, prefix, months); err != nil {
		return err
	}
	reads, err := b.compare(year, prefix, months)
	if err != nil {
		return err
	}
	r.year, r.prefix, r.months = reads[0].byP50(), reads[1].byP50(), reads[2].byP50()
	if err := b.historyCost(r); err != nil {
		return err
	}
	if err := b.retentionBeside(r); err != nil {
		return err
	}
	b.r.history = r
	return nil
}

// retentionBeside measures the hot counter alone and with a retention pass
// (history.Retention, as COUNTERS_HISTORY_RETENTION runs it) deleting the
// seeded year's first half beside it, alternating: what retention costs
// increments while it works. It runs last: the reads above need that half.
func (b *bench) retentionBeside(r *historyResult) error {
	ctx := context.Background()
	db, err := storage.Open(ctx, b.serviceDSN, storage.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	first, _ := time.Parse(time.DateOnly, historyFirstDay)
	horizon := first.AddDate(0, 6, 0)
	pass := &history.Retention{Store: storage.NewHistoryStore(db), Age: time.Since(horizon), Now: time.Now}
	hot := b.wrk("hot counter", b.url+hotPath, targetConns, postScript)
	beside := measure{"hot counter, a retention pass beside", func(d time.Duration) (load, error) {
		pctx, cancel := context.WithCancel(ctx)
		done := make(chan int64, 1)
		go func() { n, _ := pass.Pass(pctx); done <- n }()
		l, err := hot.run(d)
		cancel()
		r.retained += <-done
		return l, err
	}}
	if err := b.warm(hot); err != nil {
		return err
	}
	rs, err := b.compare(hot, beside)
	if err != nil {
		return err
	}
	r.hotAlone, r.hotRetention = rs[0].byRPS(), rs[1].byRPS()
	return nil
}

// historyReadScript makes wrk GET the path that the Lua expression path
// makes anew for each request.
func historyReadScript(path string) string {
	return seedScript + `init = function(args)
  seed()
end
request = function()
  return wrk.format("GET", ` + path + `)
end`
}

// seedHistory writes a year of history for 10,000 counters straight into
// the service's database (MariaDB's sequence tables make the rows), in
// chunks of 500 counters, and measures the table.
func (b *bench) seedHistory(r *historyResult) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	db, err := sql.Open("mysql", b.serviceDSN)
	if err != nil {
		return err
	}
	defer db.Close()
	var cols, vals []string
	for i := range historyQuarters {
		q := i * 96 / historyQuarters
		cols = append(cols, fmt.Sprintf("q%d", q))
		vals = append(vals, fmt.Sprintf("(c.seq + d.seq + %d) %% 7 + 1", i))
	}
	start := time.Now()
	logf("seeding %d counters x %d days of history", historyCounters, historyDays)
	const chunk = 500
	for from := 0; from < historyCounters; from += chunk {
		names := fmt.Sprintf("seq_%d_to_%d", from, from+chunk-1)
		_, err := db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO counter (name, value, created_at, updated_at)
			SELECT CONCAT('%[1]s', LPAD(seq, 4, '0')), 0, NOW(6), NOW(6) FROM %[2]s ON DUPLICATE KEY UPDATE name = name`, historyPrefix, names))
		if err != nil {
			return fmt.Errorf("seeding counters: %w", err)
		}
		// IGNORE: a row left by an earlier run of the scenario stays.
		_, err = db.ExecContext(ctx, fmt.Sprintf(`INSERT IGNORE INTO counter_history (name, day, %[1]s)
			SELECT CONCAT('%[3]s', LPAD(c.seq, 4, '0')), DATE('%[4]s') + INTERVAL d.seq DAY, %[2]s
			FROM %[5]s c JOIN seq_0_to_%[6]d d`,
			strings.Join(cols, ", "), strings.Join(vals, ", "), historyPrefix, historyFirstDay, names, historyDays-1))
		if err != nil {
			return fmt.Errorf("seeding history: %w", err)
		}
	}
	logf("seeded in %s", time.Since(start).Round(time.Second))
	if _, err := db.ExecContext(ctx, "ANALYZE TABLE counter_history"); err != nil {
		return err
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM counter_history").Scan(&r.rows); err != nil {
		return err
	}
	return db.QueryRowContext(ctx, `SELECT data_length, index_length FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name = 'counter_history'`).Scan(&r.dataBytes, &r.indexBytes)
}

// rollupSeeded rolls the seeded year up as history.Rollup does in the
// service, but without its rests (the benchmark wants it done), then
// measures the history tables again. OPTIMIZE gives the disk back the
// pages of counter_history that the moved days freed: a service reuses
// them for the next days' rows, this one-off move of a whole year would
// leave them idle.
func (b *bench) rollupSeeded(r *historyResult) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	db, err := storage.Open(ctx, b.serviceDSN, storage.Options{MaxOpenConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	logf("rolling up the seeded history")
	start := time.Now()
	n, err := rollUpHistory(ctx, db)
	if err != nil {
		return err
	}
	r.rollupTime = time.Since(start)
	logf("rolled up %d days in %s", n, r.rollupTime.Round(time.Second))
	r.rolledBytes, err = historyBytes(ctx, db.DB)
	return err
}

// rollUpHistory rolls db's history up as history.Rollup does in the
// service, but without its rests: the benchmark wants it done.
func rollUpHistory(ctx context.Context, db *storage.DB) (int64, error) {
	roll := &history.Rollup{Store: storage.NewHistoryStore(db), Now: time.Now, Batch: 2000, Share: 1, Pause: time.Millisecond, Timeout: time.Minute}
	n, err := roll.Pass(ctx)
	if err != nil {
		return n, fmt.Errorf("rolling up: %w", err)
	}
	return n, nil
}

// historyBytes is the data and indexes of the history tables, after
// OPTIMIZE of counter_history (see rollupSeeded) and ANALYZE of both.
func historyBytes(ctx context.Context, db *sql.DB) (int64, error) {
	for _, q := range []string{"OPTIMIZE TABLE counter_history", "ANALYZE TABLE counter_history, counter_history_month"} {
		rows, err := db.QueryContext(ctx, q) // both answer a result set
		if err != nil {
			return 0, err
		}
		rows.Close()
	}
	var n int64
	err := db.QueryRowContext(ctx, `SELECT SUM(data_length + index_length) FROM information_schema.tables
		WHERE table_schema = DATABASE() AND table_name IN ('counter_history', 'counter_history_month')`).Scan(&n)
	return n, err
}

// historyLevels are the activity levels at which historyCost measures a
// counter's year: in how many quarter hours of a day it changes, and
// the SQL of a quarter's step (c.seq the counter, d.seq the day, q the
// quarter).
var historyLevels = []struct {
	name     string
	quarters int
	step     string
}{
	{"once a day", 1, "1 + 0 * %[1]d"},
	{"8 quarter hours a day, 1 to 7 steps", 8, "(c.seq + d.seq + %[1]d) %% 7 + 1"},
	{"every quarter hour, 1 to 100 steps", 96, "(c.seq * 7 + d.seq * 13 + %[1]d * 31) %% 100 + 1"},
}

// historyCostCounters is how many counters each level's year is measured on.
const historyCostCounters = 200

// historyCost measures what a year of history costs a counter at each of
// historyLevels, each in a scratch database of its own (the service's
// database name with "_size"): a year of days ending today, seeded as the
// increments would have written it, rolled up as the service rolls it
// (today stays in counter_history, the last 37 days keep their quarters),
// and the history tables' data and indexes divided by the counters.
func (b *bench) historyCost(r *historyResult) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	cfg, err := mysql.ParseDSN(b.serviceDSN)
	if err != nil {
		return err
	}
	name := cfg.DBName + "_size"
	cfg.DBName = ""
	server, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer server.Close()
	cfg.DBName = name
	now := time.Now().UTC()
	today, _ := history.QuarterOf(now)
	first := today.AddDate(0, 0, -(historyDays - 1))
	for _, level := range historyLevels {
		if _, err := server.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name); err != nil {
			return err
		}
		if _, err := server.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
			return err
		}
		db, err := storage.Open(ctx, cfg.FormatDSN(), storage.Options{MaxOpenConns: 2})
		if err != nil {
			return err
		}
		var cols, vals []string
		for i := range level.quarters {
			cols = append(cols, fmt.Sprintf("q%d", i*96/level.quarters+(96/level.quarters)/2))
			vals = append(vals, fmt.Sprintf(level.step, i))
		}
		_, err = db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO counter_history (name, day, %[1]s)
			SELECT CONCAT('size/', LPAD(c.seq, 4, '0')), DATE('%[3]s') + INTERVAL d.seq DAY, %[2]s
			FROM seq_1_to_%[4]d c JOIN seq_0_to_%[5]d d`,
			strings.Join(cols, ", "), strings.Join(vals, ", "), first.Format(time.DateOnly), historyCostCounters, historyDays-1))
		if err == nil {
			roll := &history.Rollup{Store: storage.NewHistoryStore(db), Now: func() time.Time { return now }, Batch: 2000, Share: 1, Pause: time.Millisecond, Timeout: time.Minute}
			_, err = roll.Pass(ctx)
		}
		var n int64
		if err == nil {
			n, err = historyBytes(ctx, db.DB)
		}
		db.Close()
		if err != nil {
			return fmt.Errorf("history's cost, %s: %w", level.name, err)
		}
		r.perCounter = append(r.perCounter, n/historyCostCounters)
		logf("history of a counter seen %s: %d bytes a year", level.name, n/historyCostCounters)
	}
	_, err = server.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name)
	return err
}
