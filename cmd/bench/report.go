package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

type hotRow struct {
	conns          int
	http, raw, ser load
	healthz        *load // /healthz of the same service, alternating with the others (at targetConns)
}

type latencyResult struct{ off, on load }

type uniformResult struct{ http, raw, hot load }

type readResult struct {
	healthz, get, noCacheHealthz, getNoCache load
	cacheHits, cacheMisses                   float64 // of the service with cache, while measured
}

// leaseRow is one cache lease of the lease scenario.
type leaseRow struct {
	lease        string
	get          load
	hits, misses float64 // of that instance, while measured
}

type hitsResult struct {
	on, off     load
	unlabelled  load    // the default service with breakdowns off: no labels
	fresh       load    // the default service, every hit a User-Agent never seen before
	abacus      *load   // Abacus with its limiter, when -url-abacus was given
	abacusFresh *load   // the same, every hit a new User-Agent
	unchecked   float64 // hits the limits let through because Redis did not answer in time
}

type keysResult struct{ scoped, admin load }

type ticketsResult struct {
	workload     ticketWorkload
	service, raw load
}

// report holds what the scenarios that ran measured; nil or empty for the
// others.
type report struct {
	hot        []hotRow
	latency    *latencyResult
	uniform    *uniformResult
	read       *readResult
	lease      []leaseRow
	hits       *hitsResult
	keys       *keysResult
	webhooks   *webhooksResult
	alerts     *alertsResult
	tickets    *ticketsResult
	history    *historyResult
	breakdowns *breakdownsResult
	before     *beforeResult
	imports    *importResult
	live       *liveResult
	cores      []coresRow
	cost       []costRow
	peakRSS    int64
}

func (r *report) write(dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Benchmark results\n\n%s, %d CPU cores (%s). Medians of repeated runs; ratios are measured in this one run.\n\n",
		time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), cpuModel())

	if len(r.hot) > 0 {
		b.WriteString("## One hot counter\n\n")
		b.WriteString("| connections | HTTP increments/s | p50 | p99 | raw LAST_INSERT_ID/s | raw SERIALIZABLE/s | HTTP / raw | HTTP / SERIALIZABLE | all 2xx |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|:---:|\n")
		for _, h := range r.hot {
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", h.conns, num(h.http.RPS), dur(h.http.P50), dur(h.http.P99),
				num(h.raw.RPS), num(h.ser.RPS), ratio(h.http.RPS, h.raw.RPS), ratio(h.http.RPS, h.ser.RPS), allOK(h.http, h.raw, h.ser))
		}
		b.WriteString("\n")
	}

	if len(r.lease) > 0 {
		fmt.Fprintf(&b, "## Cache lease: GET of 1,000 counters, %d connections\n\n", targetConns)
		b.WriteString("| lease | GET/s | p50 | p99 | reads from the cache | all 2xx |\n|---|---:|---:|---:|---:|:---:|\n")
		for _, l := range r.lease {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", l.lease, num(l.get.RPS), dur(l.get.P50), dur(l.get.P99), share(l.hits, l.hits+l.misses), allOK(l.get))
		}
		b.WriteString("\n")
	}

	if bf := r.before; bf != nil {
		fmt.Fprintf(&b, "## Increments and page hits against the code of %s, history on\n\n", bf.commit)
		fmt.Fprintf(&b, "| load | now/s | p50 | %[1]s/s | p50 | now / %[1]s | all 2xx |\n|---|---:|---:|---:|---:|---:|:---:|\n", bf.commit)
		for _, row := range bf.rows() {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", row.name, num(row.now.RPS), dur(row.now.P50),
				num(row.old.RPS), dur(row.old.P50), ratio(row.now.RPS, row.old.RPS), allOK(row.now, row.old))
		}
		b.WriteString("\n")
	}

	b.WriteString(coresTable(r.cores))
	b.WriteString(costTable(r.cost))

	b.WriteString("## Summary against the targets\n\n| figure | measured | target | |\n|---|---:|---:|:---:|\n")
	// A figure without a target is shown without a verdict.
	row := func(name, measured, target string, ok bool) {
		verdict := ""
		if target != "" {
			verdict = map[bool]string{true: "met", false: "MISSED"}[ok]
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, measured, target, verdict)
	}
	if h := r.hotAt(targetConns); h != nil {
		row(fmt.Sprintf("hot counter, %d conns: HTTP / raw one-statement rate", h.conns), ratio(h.http.RPS, h.raw.RPS), ">= 6x", h.http.RPS >= 6*h.raw.RPS)
		row(fmt.Sprintf("hot counter, %d conns: HTTP %s/s / same server's /healthz %s/s", h.conns, num(h.http.RPS), num(h.healthz.RPS)),
			ratio(h.http.RPS, h.healthz.RPS), ">= 0.5x", h.http.RPS >= 0.5*h.healthz.RPS)
	}
	if l := r.latency; l != nil {
		row(fmt.Sprintf("1 conn p50: coalescing on (%s) / off (%s)", dur(l.on.P50), dur(l.off.P50)),
			ratio(float64(l.on.P50), float64(l.off.P50)), "<= 1.10x", float64(l.on.P50) <= 1.10*float64(l.off.P50))
	}
	if u := r.uniform; u != nil {
		row(fmt.Sprintf("1,000 counters, %d conns: %s/s over hot counter %s/s", targetConns, num(u.http.RPS), num(u.hot.RPS)),
			ratio(u.http.RPS, u.hot.RPS), ">= 0.8x", u.http.RPS >= 0.8*u.hot.RPS)
		row(fmt.Sprintf("1,000 counters, %d conns: HTTP over raw statements (%s/s)", targetConns, num(u.raw.RPS)),
			ratio(u.http.RPS, u.raw.RPS), "", true)
	}
	if rd := r.read; rd != nil {
		row(fmt.Sprintf("cached GET %s/s (%s of reads from the cache) over /healthz %s/s", num(rd.get.RPS), share(rd.cacheHits, rd.cacheHits+rd.cacheMisses), num(rd.healthz.RPS)),
			ratio(rd.get.RPS, rd.healthz.RPS), ">= 0.5x", rd.get.RPS >= 0.5*rd.healthz.RPS)
		row(fmt.Sprintf("GET without cache %s/s over its /healthz %s/s", num(rd.getNoCache.RPS), num(rd.noCacheHealthz.RPS)),
			ratio(rd.getNoCache.RPS, rd.noCacheHealthz.RPS), "", true)
	}
	if h := r.hits; h != nil {
		name := fmt.Sprintf("page hits from distinct visitors, %d conns: default abuse limits and visitors %s/s over neither %s/s", targetConns, num(h.on.RPS), num(h.off.RPS))
		if h.unchecked > 0 {
			name += fmt.Sprintf(" (%s hits let through unchecked)", num(h.unchecked))
		}
		row(name, ratio(h.on.RPS, h.off.RPS), ">= 0.7x", h.on.RPS >= 0.7*h.off.RPS)
		row(fmt.Sprintf("page hits from distinct visitors, %d conns: labelled (breakdowns on) %s/s over breakdowns off %s/s", targetConns, num(h.on.RPS), num(h.unlabelled.RPS)),
			ratio(h.on.RPS, h.unlabelled.RPS), ">= 0.85x", h.on.RPS >= 0.85*h.unlabelled.RPS)
		row(fmt.Sprintf("page hits, %d conns: every hit a new User-Agent %s/s over agents from a small set %s/s", targetConns, num(h.fresh.RPS), num(h.on.RPS)),
			ratio(h.fresh.RPS, h.on.RPS), "", true)
		if a := h.abacus; a != nil {
			row(fmt.Sprintf("page hits from distinct visitors, %d conns: limits and visitors on %s/s over Abacus with its limiter %s/s", targetConns, num(h.on.RPS), num(a.RPS)),
				ratio(h.on.RPS, a.RPS), ">= 1.5x", h.on.RPS >= 1.5*a.RPS)
			a := h.abacusFresh
			row(fmt.Sprintf("page hits, every hit a new User-Agent, %d conns: limits and visitors on %s/s over Abacus with its limiter %s/s", targetConns, num(h.fresh.RPS), num(a.RPS)),
				ratio(h.fresh.RPS, a.RPS), ">= 1.3x", h.fresh.RPS >= 1.3*a.RPS)
		}
	}
	if h := r.history; h != nil {
		row(fmt.Sprintf("hot counter, %d conns: history on %s/s over off %s/s", targetConns, num(h.hotOn.RPS), num(h.hotOff.RPS)),
			ratio(h.hotOn.RPS, h.hotOff.RPS), ">= 0.85x", h.hotOn.RPS >= 0.85*h.hotOff.RPS)
		row(fmt.Sprintf("1,000 counters, %d conns: history on %s/s over off %s/s", targetConns, num(h.uniformOn.RPS), num(h.uniformOff.RPS)),
			ratio(h.uniformOn.RPS, h.uniformOff.RPS), ">= 0.7x", h.uniformOn.RPS >= 0.7*h.uniformOff.RPS)
		row(fmt.Sprintf("history of one counter, a year of days, %d conns: p50 %s, %s/s", historyReadConns, dur(h.year.P50), num(h.year.RPS)),
			"p99 "+dur(h.year.P99), "p50 <= 10 ms", h.year.P50 <= 10*time.Millisecond)
		row(fmt.Sprintf("history of 1,000 counters (a prefix) over 30 days, %d conns: p50 %s, %s/s", historyReadConns, dur(h.prefix.P50), num(h.prefix.RPS)),
			"p99 "+dur(h.prefix.P99), "p50 <= 50 ms", h.prefix.P50 <= 50*time.Millisecond)
		row(fmt.Sprintf("history of 1,000 counters (a prefix), a year of months in Asia/Kolkata, %d conns: p50 %s, %s/s", historyReadConns, dur(h.months.P50), num(h.months.RPS)),
			"p99 "+dur(h.months.P99), "p50 <= 100 ms", h.months.P50 <= 100*time.Millisecond)
		row(fmt.Sprintf("seeded history: %s rows (%d counters x %d days, %d of 96 quarters each), data + indexes on disk",
			num(float64(h.rows)), historyCounters, historyDays, historyQuarters),
			fmt.Sprintf("%.0f MiB (%.0f B a row)", float64(h.dataBytes+h.indexBytes)/(1<<20), float64(h.dataBytes+h.indexBytes)/float64(max(h.rows, 1))),
			"", true)
		seeded := h.dataBytes + h.indexBytes
		row(fmt.Sprintf("the seeded history rolled up (in %s), data + indexes on disk", h.rollupTime.Round(time.Second)),
			fmt.Sprintf("%.0f MiB (%.2fx)", float64(h.rolledBytes)/(1<<20), float64(h.rolledBytes)/float64(max(seeded, 1))),
			"<= 0.25x", 4*h.rolledBytes <= seeded)
		for i, n := range h.perCounter {
			row(fmt.Sprintf("a year of a counter's history, rolled up, seen %s", historyLevels[i].name),
				fmt.Sprintf("%.1f KB", float64(n)/1000), "<= 40 KB", n <= 40000)
		}
		row(fmt.Sprintf("hot counter, %d conns: with a retention pass beside (%s pieces of history removed meanwhile) %s/s over alone %s/s",
			targetConns, num(float64(h.retained)), num(h.hotRetention.RPS), num(h.hotAlone.RPS)),
			ratio(h.hotRetention.RPS, h.hotAlone.RPS), ">= 0.9x", h.hotRetention.RPS >= 0.9*h.hotAlone.RPS)
	}
	if bd := r.breakdowns; bd != nil {
		bd.summary(row)
	}
	if bf := r.before; bf != nil {
		for _, br := range bf.rows() {
			row(fmt.Sprintf("%s: now %s/s over %s's %s/s", br.name, num(br.now.RPS), bf.commit, num(br.old.RPS)),
				ratio(br.now.RPS, br.old.RPS), fmt.Sprintf(">= %.1fx", beforeTarget), br.now.RPS >= beforeTarget*br.old.RPS)
		}
	}
	if k := r.keys; k != nil {
		row(fmt.Sprintf("hot counter, %d conns: API key scoped to its prefix %s/s over the admin token %s/s", targetConns, num(k.scoped.RPS), num(k.admin.RPS)),
			ratio(k.scoped.RPS, k.admin.RPS), ">= 0.95x", k.scoped.RPS >= 0.95*k.admin.RPS)
	}
	if a := r.alerts; a != nil {
		row(fmt.Sprintf("hot counter, %d conns: %d alerts evaluated every 5 s %s/s over none %s/s", targetConns, alertHooks, num(a.hot.RPS), num(a.hotNone.RPS)),
			ratio(a.hot.RPS, a.hotNone.RPS), ">= 0.97x", a.hot.RPS >= 0.97*a.hotNone.RPS)
		row(fmt.Sprintf("page hits, %d conns: %d alerts evaluated every 5 s %s/s over none %s/s", targetConns, alertHooks, num(a.hits.RPS), num(a.hitsNone.RPS)),
			ratio(a.hits.RPS, a.hitsNone.RPS), ">= 0.97x", a.hits.RPS >= 0.97*a.hitsNone.RPS)
	}
	if w := r.webhooks; w != nil {
		row(fmt.Sprintf("hot counter, %d conns: %d hooks watching (none crossing) %s/s over no hook watching %s/s", targetConns, webhookHooks, num(w.watched.RPS), num(w.unwatched.RPS)),
			ratio(w.watched.RPS, w.unwatched.RPS), ">= 0.95x", w.watched.RPS >= 0.95*w.unwatched.RPS)
		row(fmt.Sprintf("webhook events delivered to a receiver on this machine: %d in %.1f s (%d repeats)", w.events, w.elapsed.Seconds(), w.repeats),
			num(float64(w.events)/w.elapsed.Seconds())+" events/s", "", true)
	}
	if r.peakRSS > 0 {
		row("peak RSS of the service", fmt.Sprintf("%.1f MiB", float64(r.peakRSS)/(1<<20)), "< 100 MiB", r.peakRSS < 100<<20)
	}
	if im := r.imports; im != nil {
		for _, run := range im.runs {
			row(fmt.Sprintf("import of %s lines, %s: %.1f s", num(float64(run.lines)), run.what, run.elapsed.Seconds()),
				num(run.rate())+" lines/s", "", true)
		}
		row("peak RSS of the service over the imports", fmt.Sprintf("%.1f MiB", float64(im.peakRSS)/(1<<20)), "< 100 MiB", im.peakRSS < 100<<20)
	}
	if l := r.live; l != nil {
		row(fmt.Sprintf("hot counter, %d conns: with %d live-update streams on it %s/s (%s events sent) over none %s/s",
			targetConns, liveWatchers, num(l.with.RPS), num(l.events), num(l.without.RPS)),
			ratio(l.with.RPS, l.without.RPS), ">= 0.9x", l.with.RPS >= 0.9*l.without.RPS)
		row(fmt.Sprintf("%s idle live-update streams on one process (opened in %.1f s): RSS (%.1f MiB before), goroutines %s (%s before)",
			num(liveIdleStreams), l.opened.Seconds(), float64(l.baseRSS)/(1<<20), num(l.idleGoroutines), num(l.baseGoroutines)),
			fmt.Sprintf("%.1f MiB", float64(l.idleRSS)/(1<<20)), "< 300 MiB", l.idleRSS < 300<<20)
	}
	if t := r.tickets; t != nil {
		w := t.workload
		row(fmt.Sprintf("%s tickets, %d boards x %d workers: service %s/s (%.2f s) over raw seed technique %s/s (%.2f s)",
			num(float64(w.total())), w.boards, w.workers, num(t.service.RPS), seconds(t.service), num(t.raw.RPS), seconds(t.raw)),
			ratio(t.service.RPS, t.raw.RPS), ">= 1x", t.service.RPS >= t.raw.RPS)
	}
	bad := r.httpBad()
	fmt.Fprintf(&b, "\nEvery HTTP answer 2xx: %s (%d non-2xx or socket errors).\n", map[bool]string{true: "yes", false: "NO"}[bad == 0], bad)

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if len(r.hot) > 1 {
		b.WriteString("\n![throughput against concurrency](throughput.svg)\n")
		if err := os.WriteFile(filepath.Join(dir, "throughput.svg"), r.chart(), 0o644); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Print(b.String())
	return nil
}

// httpBad counts the bad answers of every HTTP load (the ticket workload
// stops at its first).
func (r *report) httpBad() int64 {
	var loads []load
	for _, h := range r.hot {
		loads = append(loads, h.http)
		if h.healthz != nil {
			loads = append(loads, *h.healthz)
		}
	}
	if l := r.latency; l != nil {
		loads = append(loads, l.off, l.on)
	}
	if u := r.uniform; u != nil {
		loads = append(loads, u.http, u.hot)
	}
	if rd := r.read; rd != nil {
		loads = append(loads, rd.healthz, rd.get, rd.noCacheHealthz, rd.getNoCache)
	}
	for _, l := range r.lease {
		loads = append(loads, l.get)
	}
	if h := r.hits; h != nil {
		loads = append(loads, h.on, h.off, h.unlabelled, h.fresh)
		if h.abacus != nil {
			loads = append(loads, *h.abacus, *h.abacusFresh)
		}
	}
	if h := r.history; h != nil {
		loads = append(loads, h.hotOn, h.hotOff, h.uniformOn, h.uniformOff, h.year, h.prefix, h.months, h.hotAlone, h.hotRetention)
	}
	if l := r.live; l != nil {
		loads = append(loads, l.without, l.with)
	}
	if bd := r.breakdowns; bd != nil {
		loads = append(loads, bd.loads()...)
	}
	if k := r.keys; k != nil {
		loads = append(loads, k.scoped, k.admin)
	}
	if bf := r.before; bf != nil {
		for _, row := range bf.rows() {
			loads = append(loads, row.now, row.old)
		}
	}
	if w := r.webhooks; w != nil {
		loads = append(loads, w.watched, w.unwatched)
	}
	if a := r.alerts; a != nil {
		loads = append(loads, a.hot, a.hotNone, a.hits, a.hitsNone)
	}
	for _, c := range r.cores {
		loads = append(loads, c.uniform, c.hot, c.hits)
	}
	for _, c := range r.cost {
		loads = append(loads, c.load)
	}
	var bad int64
	for _, l := range loads {
		bad += l.Bad
	}
	return bad
}

func (r *report) hotAt(conns int) *hotRow {
	for i := range r.hot {
		if r.hot[i].conns == conns {
			return &r.hot[i]
		}
	}
	return nil
}

func num(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

func dur(d time.Duration) string {
	if d < time.Millisecond {
		return fmt.Sprintf("%d µs", d.Microseconds())
	}
	return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond))
}

func seconds(l load) float64 { return float64(l.Requests) / l.RPS }

// share is part/whole as a percentage.
func share(part, whole float64) string {
	if whole == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*part/whole)
}

func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

func allOK(ls ...load) string {
	for _, l := range ls {
		if l.Bad > 0 {
			return fmt.Sprintf("NO (%d)", l.Bad)
		}
	}
	return "yes"
}

// chart draws throughput against connections (log scale) for the service
// and both raw baselines.
func (r *report) chart() []byte {
	const w, h, left, bottom, top, right = 640, 360, 70, 40, 30, 160
	maxY := 1.0
	for _, row := range r.hot {
		maxY = math.Max(maxY, math.Max(row.http.RPS, math.Max(row.raw.RPS, row.ser.RPS)))
	}
	x := func(i int) float64 {
		if len(r.hot) == 1 {
			return left
		}
		return left + float64(i)*float64(w-left-right)/float64(len(r.hot)-1)
	}
	y := func(v float64) float64 { return float64(h-bottom) - v/maxY*float64(h-bottom-top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%d" y="18" font-size="14">Increments/s of one counter against connections</text>`, left)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`, left, h-bottom, w-right, h-bottom)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`, left, top, left, h-bottom)
	for i := 0; i <= 4; i++ {
		v := maxY * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%s</text>`, left-6, y(v)+4, num(v))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="#ddd"/>`, left, y(v), w-right, y(v))
	}
	for i, row := range r.hot {
		fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">%d</text>`, x(i), h-bottom+16, row.conns)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">connections</text>`, (w-right+left)/2, h-6)
	series := []struct {
		name, color string
		get         func(hotRow) float64
	}{
		{"service (HTTP)", "#1f77b4", func(r hotRow) float64 { return r.http.RPS }},
		{"raw LAST_INSERT_ID", "#ff7f0e", func(r hotRow) float64 { return r.raw.RPS }},
		{"raw SERIALIZABLE", "#2ca02c", func(r hotRow) float64 { return r.ser.RPS }},
	}
	for k, s := range series {
		var pts []string
		for i, row := range r.hot {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(i), y(s.get(row))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, s.color, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d">%s</text>`,
			w-right+12, top+20*k, s.color, w-right+30, top+20*k+11, s.name)
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// cpuModel is the processor's name as Linux gives it, or "unknown".
func cpuModel() string {
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(info), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
