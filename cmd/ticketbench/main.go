// Command ticketbench measures ticket creation under concurrency two ways
// and prints them side by side:
//
//   - service: POST /v1/boards/{id}/tickets against a running countersvc
//     (counter increment through counters.Service, group-committed INSERTs);
//   - raw: the seed's technique straight against MySQL from Go, per ticket
//     UPDATE board SET max_ticket_id = LAST_INSERT_ID(max_ticket_id + 1)
//     then INSERT INTO ticket, each its own autocommit round trip, in the
//     scratch database of -dsn (dropped and created afresh with the
//     service's migrations plus the seed's board.max_ticket_id).
//
// Both runs use the same boards x workers x tickets and verify that every
// board ends with exactly the numbers 1..workers*tickets. scripts/bench-tickets
// starts MariaDB and the service and runs this in one go.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

type config struct {
	dsn, url, token      string
	boards, workers, per int
	rounds               int
	description          string
}

func main() {
	var c config
	var descLen int
	flag.StringVar(&c.dsn, "dsn", "", "go-sql-driver DSN of a scratch database for the raw run; it is dropped and recreated, so its name must contain \"bench\"")
	flag.StringVar(&c.url, "url", "http://127.0.0.1:8080", "base URL of the running service")
	flag.StringVar(&c.token, "token", os.Getenv("COUNTERS_API_TOKEN"), "bearer token of the service, if it needs one")
	flag.IntVar(&c.boards, "boards", 2, "boards")
	flag.IntVar(&c.workers, "workers", 10, "concurrent workers per board")
	flag.IntVar(&c.per, "tickets", 1000, "tickets each worker creates")
	flag.IntVar(&c.rounds, "rounds", 1, "runs of each workload; the table shows the median")
	flag.IntVar(&descLen, "description", 100, "characters of each ticket's description")
	skipRaw := flag.Bool("skip-raw", false, "measure only the service")
	summary := flag.String("summary", "", "also write the result as a Markdown table row to this file (scripts/bench)")
	flag.Parse()
	if c.boards < 1 || c.workers < 1 || c.per < 1 || c.rounds < 1 || c.dsn == "" && !*skipRaw {
		fmt.Fprintln(os.Stderr, "ticketbench: -boards, -workers, -tickets and -rounds must be positive, and -dsn is required unless -skip-raw")
		os.Exit(2)
	}
	c.description = strings.Repeat("d", descLen)

	ctx := context.Background()
	var svc, raw []time.Duration
	for round := 1; round <= c.rounds; round++ {
		d, err := runService(ctx, c)
		if err != nil {
			fail("service", err)
		}
		svc = append(svc, d)
		fmt.Fprintf(os.Stderr, "round %d: service %v\n", round, d.Round(time.Millisecond))
		if *skipRaw {
			continue
		}
		d, err = runRaw(ctx, c)
		if err != nil {
			fail("raw", err)
		}
		raw = append(raw, d)
		fmt.Fprintf(os.Stderr, "round %d: raw     %v\n", round, d.Round(time.Millisecond))
	}
	printTable(c, median(svc), median(raw))
	if *summary != "" {
		if err := writeSummary(*summary, c, median(svc), median(raw)); err != nil {
			fail("summary", err)
		}
	}
}

// writeSummary writes the row scripts/bench adds to its table of targets.
func writeSummary(path string, c config, svc, raw time.Duration) error {
	n := float64(c.total())
	ratio := raw.Seconds() / svc.Seconds()
	met := "met"
	if ratio < 1 {
		met = "MISSED"
	}
	row := fmt.Sprintf("| %d tickets, %d boards x %d workers: service %.0f/s (%.2f s) over raw seed technique %.0f/s (%.2f s) | %.2fx | >= 1x | %s |\n",
		c.total(), c.boards, c.workers, n/svc.Seconds(), svc.Seconds(), n/raw.Seconds(), raw.Seconds(), ratio, met)
	return os.WriteFile(path, []byte(row), 0o644)
}

func fail(what string, err error) {
	fmt.Fprintf(os.Stderr, "ticketbench: %s run: %v\n", what, err)
	os.Exit(1)
}

func (c config) total() int { return c.boards * c.workers * c.per }

func printTable(c config, svc, raw time.Duration) {
	n := float64(c.total())
	fmt.Printf("%d tickets: %d boards x %d workers per board x %d tickets each\n\n", c.total(), c.boards, c.workers, c.per)
	fmt.Printf("%-44s %9s %11s\n", "workload", "seconds", "tickets/s")
	fmt.Printf("%-44s %9.2f %11.0f\n", "service: HTTP, counters.Service, group commit", svc.Seconds(), n/svc.Seconds())
	if raw == 0 {
		return
	}
	fmt.Printf("%-44s %9.2f %11.0f\n", "raw: UPDATE ... LAST_INSERT_ID + INSERT", raw.Seconds(), n/raw.Seconds())
	fmt.Printf("\nratio service/raw (tickets/s): %.2fx\n", raw.Seconds()/svc.Seconds())
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
