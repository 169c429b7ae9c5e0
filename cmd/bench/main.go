// Command bench measures the running service against the raw techniques it
// replaces, in one run, and prints a table of figures and ratios (also
// written as Markdown with an SVG chart). scripts/bench starts everything it
// needs and runs it.
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

type config struct {
	url, urlNoCoalesce, urlNoCache string
	dsn                            string
	pid                            int
	conns                          []int
	duration                       time.Duration
	reps                           int
	out                            string
	extra                          string // Markdown rows from other benchmarks, appended as given
	extraCmd                       string // shell command run last, before -extra is read
}

func main() {
	var c config
	var conns string
	flag.StringVar(&c.url, "url", "http://127.0.0.1:18080", "service under test")
	flag.StringVar(&c.urlNoCoalesce, "url-nocoalesce", "", "the same service with COUNTERS_COALESCE=false")
	flag.StringVar(&c.urlNoCache, "url-nocache", "", "the same service without Redis")
	flag.StringVar(&c.dsn, "dsn", "", "MySQL DSN for the raw baselines (a scratch database)")
	flag.IntVar(&c.pid, "pid", 0, "service process id, for its peak RSS")
	flag.StringVar(&conns, "conns", "1,16,64,256", "connection counts of the hot-counter scenario")
	flag.DurationVar(&c.duration, "duration", 4*time.Second, "length of each measurement")
	flag.IntVar(&c.reps, "reps", 3, "repetitions of each measurement; the median is reported")
	flag.StringVar(&c.out, "out", "bench-results", "directory for results.md and throughput.svg")
	flag.StringVar(&c.extra, "extra", "", "file with extra Markdown table rows to include")
	flag.StringVar(&c.extraCmd, "extra-cmd", "", "shell command that writes the -extra file, run after the other scenarios")
	flag.Parse()
	for _, s := range strings.Split(conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fatal(fmt.Errorf("bad -conns %q", conns))
		}
		c.conns = append(c.conns, n)
	}
	if err := run(c); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

// median runs measure reps times and keeps the run with the median rate.
func median(reps int, measure func() (load, error)) (load, error) {
	var runs []load
	for i := 0; i < reps; i++ {
		l, err := measure()
		if err != nil {
			return l, err
		}
		runs = append(runs, l)
	}
	return medianRPS(runs), nil
}

func run(c config) error {
	// The driver interpolates the parameters, as in the service's own
	// session: otherwise every raw statement with an argument would be
	// prepared, executed and closed, two round trips where the service's
	// statements take one.
	dbConfig, err := mysql.ParseDSN(c.dsn)
	if err != nil {
		return err
	}
	dbConfig.InterpolateParams = true
	connector, err := mysql.NewConnector(dbConfig)
	if err != nil {
		return err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	r := &report{}
	hot := c.url + "/v1/counters/bench%2Fhot/increment"
	logf := func(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }

	// Warm-up: create the rows and let MySQL settle, so that the first
	// measurement is not the one that pays for it.
	logf("warming up")
	if _, err := wrkRun(hot, 64, 2*time.Second, postScript); err != nil {
		return err
	}
	if _, err := wrkRun(c.url, 64, 2*time.Second, uniformScript("/v1/counters/bench%2Fu", 1000)); err != nil {
		return err
	}
	if _, err := rawRun(db, rawLastInsertID, 64, 1000, 2*time.Second); err != nil {
		return err
	}

	// 1. One hot counter at each concurrency, with its raw baselines. The
	// three alternate within each repetition, so that background work one
	// leaves in MySQL (purge of the undo log) weighs on all of them alike.
	for _, n := range c.conns {
		logf("hot counter, %d connections", n)
		var https, raws, sers []load
		for i := 0; i < c.reps; i++ {
			h, err := wrkRun(hot, n, c.duration, postScript)
			if err != nil {
				return err
			}
			raw, err := rawRun(db, rawLastInsertID, n, 1, c.duration)
			if err != nil {
				return err
			}
			ser, err := rawRun(db, rawSerializable, n, 1, c.duration)
			if err != nil {
				return err
			}
			https, raws, sers = append(https, h), append(raws, raw), append(sers, ser)
		}
		r.hot = append(r.hot, hotRow{conns: n, http: medianRPS(https), raw: medianRPS(raws), ser: medianRPS(sers)})
	}

	// Idle latency: one connection, coalescing off versus on, alternating
	// so that both see the same machine.
	if c.urlNoCoalesce != "" {
		logf("one connection, coalescing off and on, alternating")
		var offs, ons []load
		for i := 0; i < c.reps; i++ {
			off, err := wrkRun(c.urlNoCoalesce+"/v1/counters/bench%2Fidle-off/increment", 1, c.duration, postScript)
			if err != nil {
				return err
			}
			on, err := wrkRun(c.url+"/v1/counters/bench%2Fidle-on/increment", 1, c.duration, postScript)
			if err != nil {
				return err
			}
			offs, ons = append(offs, off), append(ons, on)
		}
		off, on := medianP50(offs), medianP50(ons)
		r.idleOff, r.idleOn = &off, &on
	}

	// 2. 1,000 counters under uniform load at 64 connections.
	logf("1,000 counters, 64 connections")
	if r.uniform, err = median(c.reps, func() (load, error) {
		return wrkRun(c.url, 64, c.duration, uniformScript("/v1/counters/bench%2Fu", 1000))
	}); err != nil {
		return err
	}
	if r.uniformRaw, err = median(c.reps, func() (load, error) { return rawRun(db, rawLastInsertID, 64, 1000, c.duration) }); err != nil {
		return err
	}
	if r.hot64, err = median(c.reps, func() (load, error) { return wrkRun(hot, 64, c.duration, postScript) }); err != nil {
		return err
	}

	// 3. Cached GET of one counter, and increments of it, against /healthz of
	// the same server, alternating.
	logf("cached GET and increments versus /healthz, 64 connections")
	var healthzs, gets, incs []load
	for i := 0; i < c.reps; i++ {
		h, err := wrkRun(c.url+"/healthz", 64, c.duration, "")
		if err != nil {
			return err
		}
		g, err := wrkRun(c.url+"/v1/counters/bench%2Fhot", 64, c.duration, "")
		if err != nil {
			return err
		}
		inc, err := wrkRun(hot, 64, c.duration, postScript)
		if err != nil {
			return err
		}
		healthzs, gets, incs = append(healthzs, h), append(gets, g), append(incs, inc)
	}
	r.healthz, r.get, r.hotBesideHealthz = medianRPS(healthzs), medianRPS(gets), medianRPS(incs)
	if c.urlNoCache != "" {
		noCacheHealthz, err := median(c.reps, func() (load, error) { return wrkRun(c.urlNoCache+"/healthz", 64, c.duration, "") })
		if err != nil {
			return err
		}
		noCache, err := median(c.reps, func() (load, error) { return wrkRun(c.urlNoCache+"/v1/counters/bench%2Fhot", 64, c.duration, "") })
		if err != nil {
			return err
		}
		r.noCacheHealthz, r.getNoCache = &noCacheHealthz, &noCache
	}

	// 4. The ticket workload, run by its own program.
	if c.extraCmd != "" {
		logf("running %s", c.extraCmd)
		cmd := exec.Command("sh", "-c", c.extraCmd)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("-extra-cmd: %w", err)
		}
	}

	// 5. Peak RSS of the service over the whole run.
	if c.pid > 0 {
		r.peakRSS, _ = peakRSS(c.pid)
	}
	if c.extra != "" {
		b, err := os.ReadFile(c.extra)
		if err != nil {
			return err
		}
		r.extra = strings.TrimSpace(string(b))
	}
	return r.write(c.out)
}

// medianRPS keeps the run with the median rate; a bad answer in any run
// counts.
func medianRPS(runs []load) load {
	var bad int64
	for _, r := range runs {
		bad += r.Bad
	}
	sort.Slice(runs, func(i, j int) bool { return runs[i].RPS < runs[j].RPS })
	m := runs[len(runs)/2]
	m.Bad = bad
	return m
}

// medianP50 keeps the run with the median p50 latency.
func medianP50(runs []load) load {
	sort.Slice(runs, func(i, j int) bool { return runs[i].P50 < runs[j].P50 })
	return runs[len(runs)/2]
}

// peakRSS reads the process's high-water mark of resident memory.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM for pid %d", pid)
}
