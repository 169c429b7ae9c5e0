package main

import (
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/storage"

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
	year, prefix                         load // reads
	rows, dataBytes, indexBytes          int64
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
	year := b.wrk("history: one counter, a year of days", b.url, historyReadConns, historyReadScript(
		`string.format("/v1/counters/bench%%2Fh%%2F%04d/history?step=day&from=2025-01-01&to=2026-01-01", math.random(0, 9999))`))
	prefix := b.wrk("history: 1,000 counters, 30 days", b.url, historyReadConns, historyReadScript(
		`string.format("/v1/history?prefix=bench/h/%d&step=day&from=2025-06-01&to=2025-07-01", math.random(0, 9))`))
	if err := b.warm(year, prefix); err != nil {
		return err
	}
	reads, err := b.compare(year, prefix)
	if err != nil {
		return err
	}
	r.year, r.prefix = reads[0].byP50(), reads[1].byP50()
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
