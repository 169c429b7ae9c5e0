package storage_test

import (
	"context"
	"database/sql"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/storage"
)

// What a page's labelled rounds cost the server: rounds of 16 hits of one
// counter, two in flight, each hit's labels drawn as the bench's hits
// scenario draws them (five referrers, eight agents' browser, system and
// device), summed per distinct set as the coalescer sums them. Reported
// per round from the server's own counts, which the load of the machine
// does not change: redo bytes, statements, transactions, and, when the
// server runs on this machine, its CPU time.
func BenchmarkLabelledRounds(b *testing.B) {
	b.Run("labelled", func(b *testing.B) { benchmarkRounds(b, true) })
	b.Run("breakdowns_off", func(b *testing.B) { benchmarkRounds(b, false) })
}

func benchmarkRounds(b *testing.B, labelled bool) {
	dsn := storetest.MigratedDSN(b)
	s, _ := storetest.OpenStore(b, dsn)
	s.Count(storage.Labels(labelled, 0))
	if n, _ := strconv.Atoi(os.Getenv("SLOT")); n > 0 {
		storage.SetLabelSlot(s, n)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	type agent struct{ browser, os, device string }
	agents := []agent{{"Chrome", "Windows", "desktop"}, {"Chrome", "macOS", "desktop"}, {"Chrome", "Linux", "desktop"},
		{"Safari", "iOS", "mobile"}, {"Safari", "macOS", "desktop"}, {"Chrome", "Android", "mobile"},
		{"Firefox", "Windows", "desktop"}, {"Edge", "Windows", "desktop"}}
	referrers := []string{"google.com", "news.example.com", "t.co", "example.org", "(direct)"}
	var sets []counters.Extra
	for _, a := range agents {
		for _, r := range referrers {
			sets = append(sets, breakdowns.Of(breakdowns.Labels{"referrer": r, "country": "(unknown)", "browser": a.browser, "os": a.os, "device": a.device}))
		}
	}
	const hitsARound = 16
	ctx := context.Background()
	before := serverCounts(b, db)
	b.ResetTimer()
	b.SetParallelism(1) // GOMAXPROCS rounds in flight: two on the project's machine
	b.RunParallel(func(pb *testing.PB) {
		seed := uint32(time.Now().UnixNano())
		for pb.Next() {
			by := map[counters.Extra]int64{}
			for range hitsARound {
				seed = seed*1664525 + 1013904223
				by[sets[int(seed>>8)%len(sets)]]++
			}
			now := time.Now()
			inc := counters.Increment{Name: "hits/bench/page", By: hitsARound}
			for x, n := range by {
				inc.Parts = append(inc.Parts, counters.Part{At: now, By: n, Extra: x})
			}
			if _, err := s.IncrementMany(ctx, []counters.Increment{inc}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	after := serverCounts(b, db)
	for _, m := range []struct{ name, unit string }{
		{"Innodb_lsn_current", "redo-B/round"}, {"Questions", "statements/round"},
		{"Com_begin", "transactions/round"}, {"cpu", "server-µs/round"},
	} {
		if d, ok := after[m.name]; ok {
			b.ReportMetric((d-before[m.name])/float64(b.N), m.unit)
		}
	}
}

// serverCounts reads the server's counts that BenchmarkLabelledRounds
// reports, and its CPU time in µs ("cpu") when its process is on this
// machine.
func serverCounts(tb testing.TB, db *sql.DB) map[string]float64 {
	tb.Helper()
	out := map[string]float64{}
	rows, err := db.Query("SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_lsn_current', 'Questions', 'Com_begin')")
	if err != nil {
		tb.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			tb.Fatal(err)
		}
		out[name], _ = strconv.ParseFloat(value, 64)
	}
	var pidFile string
	if err := db.QueryRow("SELECT @@pid_file").Scan(&pidFile); err != nil {
		return out
	}
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		return out
	}
	stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/stat")
	if err != nil {
		return out
	}
	// utime and stime, the 14th and 15th fields, after the command's
	// parenthesis (which may hold spaces), in clock ticks of 10 ms.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	out["cpu"] = (u + st) * 10000
	return out
}
