package main

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// The cores scenario: the service (-pid) pinned with taskset to 1, 2, 4,
// ... cores and then to all of them, at each its increments (1,000
// counters and the hot one) and page hits at 64 connections: the curve of
// how its throughput grows with the machine, not one point. MariaDB,
// Redis and wrk stay free to run on any core. The core counts alternate
// within each repetition, as every comparison here does, and the service
// is given every core back when the scenario ends.

type coresRow struct {
	cores              int
	uniform, hot, hits load
}

// coreCounts are 1, 2, 4, ... below n, and n.
func coreCounts(n int) []int {
	var out []int
	for c := 1; c < n; c *= 2 {
		out = append(out, c)
	}
	return append(out, n)
}

// pin runs taskset on every thread of pid: cores 0 to n-1. Go's runtime
// follows the new affinity with GOMAXPROCS, about a second later (checked
// here: a process moved to one core of two read GOMAXPROCS 1 within 1.5 s).
func pin(pid, n int) error {
	out, err := exec.Command("taskset", "-a", "-p", "-c", fmt.Sprintf("0-%d", n-1), fmt.Sprint(pid)).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// pinned is m run with the service pinned to n cores.
func (b *bench) pinned(n int, m measure) measure {
	return measure{fmt.Sprintf("%s, %d cores", m.name, n), func(d time.Duration) (load, error) {
		if b.pinnedTo != n {
			if err := pin(b.pid, n); err != nil {
				return load{}, err
			}
			// Let the runtime see its new cores before the load starts.
			time.Sleep(2500 * time.Millisecond)
			b.pinnedTo = n
		}
		return m.run(d)
	}}
}

func (b *bench) cores() error {
	counts := coreCounts(runtime.NumCPU())
	defer func() {
		pin(b.pid, runtime.NumCPU())
		b.pinnedTo = 0
	}()
	uniform := uniformScript("POST", uniformPrefix, "/increment", uniformCounters)
	var ms []measure
	for _, n := range counts {
		ms = append(ms,
			b.pinned(n, b.wrk("1,000 counters", b.url, targetConns, uniform)),
			b.pinned(n, b.wrk("hot counter", b.url+hotPath, targetConns, postScript)),
			b.pinned(n, b.wrk("page hits, limits and visitors on", b.url+hitsPath, targetConns, visitorsScript)))
	}
	if err := b.warm(ms...); err != nil {
		return err
	}
	rs, err := b.compare(ms...)
	if err != nil {
		return err
	}
	for i, n := range counts {
		b.r.cores = append(b.r.cores, coresRow{cores: n, uniform: rs[3*i].byRPS(), hot: rs[3*i+1].byRPS(), hits: rs[3*i+2].byRPS()})
	}
	return nil
}

// coresTable is the curve as a table: each figure and its gain over one core.
func coresTable(rows []coresRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## The service pinned to n cores (taskset), %d connections\n\n", targetConns)
	b.WriteString("| cores | 1,000 counters/s | over 1 core | hot counter/s | over 1 core | page hits/s | over 1 core | all 2xx |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|:---:|\n")
	one := rows[0]
	for _, r := range rows {
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s |\n", r.cores,
			num(r.uniform.RPS), ratio(r.uniform.RPS, one.uniform.RPS), num(r.hot.RPS), ratio(r.hot.RPS, one.hot.RPS),
			num(r.hits.RPS), ratio(r.hits.RPS, one.hits.RPS), allOK(r.uniform, r.hot, r.hits))
	}
	b.WriteString("\n")
	return b.String()
}
