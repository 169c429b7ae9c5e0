package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// The cost scenario: what one request of each load costs each process, so
// that a machine's throughput can be reasoned from a smaller one's. For
// /healthz, the hot counter, 1,000 counters and page hits at 64
// connections, the hits also on the instance with the limits and visitors
// off (-url-nolimits, -pid-nolimits: on two cores the two rates stand
// about as their CPU a hit in all, which a busy machine does not change as
// much as the rates), alternating, as everywhere here, it reads, around
// each run, the CPU time of the service (-pid), of MariaDB (-pid-mysql) and
// of Redis (-pid-redis) from /proc, and the service's own metrics: the goroutines
// its scheduler woke (the Go runtime samples one in eight of them) and the
// coalescer's statements and the increments they carried. A process at
// c µs of CPU a request serves at most 1,000,000/c requests a second per
// core it gets; where no process is near that, the load is bound by
// latency: connections / latency, with rounds in flight x increments per
// round / round time for the coalescer.

// costRow is the median of each per-request figure over one load's runs.
type costRow struct {
	name string
	load load
	// CPU µs a request of the service, MariaDB and Redis (-1: not given).
	service, mysql, redis float64
	cores                 float64 // the service's busy cores
	wakeups               float64 // goroutines the service's scheduler woke a request
	statements            float64 // coalesced statements a request
}

// costSeries are the /metrics series the scenario reads around each run.
var costSeries = []string{
	"go_sched_latencies_seconds_count",
	"counters_coalesce_statements_total",
}

// runtimeSampling is how many goroutine wake-ups the runtime's scheduling
// latency histogram counts as one (runtime.gTrackingPeriod).
const runtimeSampling = 8

type costSample struct {
	cpu    [3]float64 // seconds: service, MariaDB, Redis; -1 without a pid
	series []float64
}

// costSample reads the figures of the service at url, whose process is pid.
func (b *bench) costSample(url string, pid int) (costSample, error) {
	s := costSample{}
	for i, pid := range []int{pid, b.mysqlPID, b.redisPID} {
		s.cpu[i] = -1
		if pid > 0 {
			v, err := cpuSeconds(pid)
			if err != nil {
				return s, err
			}
			s.cpu[i] = v
		}
	}
	var err error
	s.series, err = b.metrics(url, costSeries...)
	return s, err
}

// cpuSeconds is the user and system CPU time pid has used, from
// /proc/<pid>/stat (in clock ticks of 1/100 s, as on every Linux the
// project runs on).
func cpuSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: count the fields
	// after it (state is field 3, utime 14, stime 15).
	i := bytes.LastIndexByte(raw, ')')
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return (utime + stime) / 100, nil
}

// costed is m, a load on the service at url whose process is pid, with
// what each of its runs cost appended to rows.
func (b *bench) costed(m measure, url string, pid int, rows *[]costRow) measure {
	return measure{m.name, func(d time.Duration) (load, error) {
		before, err := b.costSample(url, pid)
		if err != nil {
			return load{}, err
		}
		l, err := m.run(d)
		if err != nil {
			return l, err
		}
		after, err := b.costSample(url, pid)
		if err != nil {
			return l, err
		}
		*rows = append(*rows, perRequest(m.name, l, before, after))
		return l, nil
	}}
}

func perRequest(name string, l load, before, after costSample) costRow {
	n := float64(max(l.Requests, 1))
	us := func(i int) float64 {
		if before.cpu[i] < 0 {
			return -1
		}
		return (after.cpu[i] - before.cpu[i]) * 1e6 / n
	}
	seconds := n / max(l.RPS, 1)
	return costRow{
		name: name, load: l,
		service: us(0), mysql: us(1), redis: us(2),
		cores:      (after.cpu[0] - before.cpu[0]) / seconds,
		wakeups:    (after.series[0] - before.series[0]) * runtimeSampling / n,
		statements: (after.series[1] - before.series[1]) / n,
	}
}

func (b *bench) cost() error {
	uniform := uniformScript("POST", uniformPrefix, "/increment", uniformCounters)
	ms := []measure{
		b.wrk("/healthz", b.url+"/healthz", targetConns, ""),
		b.wrk("hot counter", b.url+hotPath, targetConns, postScript),
		b.wrk("1,000 counters", b.url, targetConns, uniform),
		b.wrk("page hits, limits and visitors on", b.url+hitsPath, targetConns, visitorsScript),
	}
	off := *b.urls["nolimits"]
	ms = append(ms, b.wrk("page hits, limits and visitors off", off+hitsPath, targetConns, visitorsScript))
	if err := b.warm(ms...); err != nil {
		return err
	}
	samples := make([][]costRow, len(ms))
	costed := make([]measure, len(ms))
	for i, m := range ms {
		url, pid := b.url, b.pid
		if i == len(ms)-1 {
			url, pid = off, b.nolimitsPID
		}
		costed[i] = b.costed(m, url, pid, &samples[i])
	}
	if _, err := b.compare(costed...); err != nil {
		return err
	}
	for _, rows := range samples {
		b.r.cost = append(b.r.cost, medianCost(rows))
	}
	return nil
}

// medianCost is the median of each figure of rows, one load's runs; its
// load is the run of the median rate, with every run's bad answers.
func medianCost(rows []costRow) costRow {
	loads := make(runs, len(rows))
	for i, r := range rows {
		loads[i] = r.load
	}
	of := func(f func(costRow) float64) float64 { return f(median(rows, f)) }
	return costRow{
		name:       rows[0].name,
		load:       loads.byRPS(),
		service:    of(func(r costRow) float64 { return r.service }),
		mysql:      of(func(r costRow) float64 { return r.mysql }),
		redis:      of(func(r costRow) float64 { return r.redis }),
		cores:      of(func(r costRow) float64 { return r.cores }),
		wakeups:    of(func(r costRow) float64 { return r.wakeups }),
		statements: of(func(r costRow) float64 { return r.statements }),
	}
}

func costTable(rows []costRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## What a request costs, %d connections\n\n", targetConns)
	b.WriteString("CPU µs a request of each process, and what one core of it could serve at that cost; goroutines the service's scheduler woke and coalesced statements it sent a request.\n\n")
	b.WriteString("| load | rate/s | service µs | service cores | MariaDB µs | Redis µs | per service core/s | per MariaDB core/s | per Redis core/s | wake-ups | statements | all 2xx |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n")
	us := func(v float64) string {
		if v < 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.1f", v)
	}
	perCore := func(v float64) string {
		if v <= 0 {
			return "n/a"
		}
		return num(1e6 / v)
	}
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %.2f | %s | %s | %s | %s | %s | %.2f | %.3f | %s |\n", r.name, num(r.load.RPS),
			us(r.service), r.cores, us(r.mysql), us(r.redis), perCore(r.service), perCore(r.mysql), perCore(r.redis),
			r.wakeups, r.statements, allOK(r.load))
	}
	b.WriteString("\n")
	return b.String()
}
