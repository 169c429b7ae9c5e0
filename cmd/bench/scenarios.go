package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// targetConns is the concurrency at which the targets are stated.
const targetConns = 64

// What the scenarios drive. Each counter belongs to one scenario, so that
// any subset of them runs alike.
const (
	hotPath         = "/v1/counters/bench%2Fhot/increment"
	uniformPrefix   = "/v1/counters/bench%2Fu"
	uniformCounters = 1000
	readPath        = "/v1/counters/bench%2Fread"
	leasePrefix     = "/v1/counters/bench%2Fl"
	hitsPath        = "/v1/hits/hits%2Fbench%2Fpage"
	abacusHitPath   = "/hit/bench/page" // Abacus' hit, which creates the key on first use
	keyedPath       = "/v1/counters/bench%2Fkeyed/increment"
)

// A measure is a load the benchmark can drive for a while; its name also
// says what has been warmed up.
type measure struct {
	name string
	run  func(time.Duration) (load, error)
}

// wrk measures url with wrk (script "" = plain GET).
func (b *bench) wrk(name, url string, conns int, script string) measure {
	return measure{name, func(d time.Duration) (load, error) { return wrkRun(url, conns, d, script) }}
}

// raw measures a raw baseline on the raw counters' database.
func (b *bench) raw(name string, mode rawMode, conns, counters int) measure {
	return measure{name, func(d time.Duration) (load, error) {
		db, err := b.rawCounters()
		if err != nil {
			return load{}, err
		}
		return rawRun(db, mode, conns, counters, d)
	}}
}

// warm runs each of ms for the warm-up time, unless an earlier scenario
// warmed it: the first run of a load pays for creating its rows and
// filling pools and caches, and should not be one of those measured.
func (b *bench) warm(ms ...measure) error {
	for _, m := range ms {
		if b.warmed[m.name] {
			continue
		}
		logf("warming up: %s", m.name)
		l, err := m.run(b.warmup)
		if err != nil {
			return err
		}
		if l.Bad > 0 {
			return fmt.Errorf("warming up %s: %d bad answers", m.name, l.Bad)
		}
		b.warmed[m.name] = true
	}
	return nil
}

// compare runs each of ms for -duration, alternating, -reps times.
func (b *bench) compare(ms ...measure) ([]runs, error) {
	fs := make([]func() (load, error), len(ms))
	for i, m := range ms {
		fs[i] = func() (load, error) { return m.run(b.duration) }
	}
	return alternate(b.reps, fs...)
}

// compareCounting is compare, and also how much each of the /metrics
// series of url grew over the measured runs.
func (b *bench) compareCounting(url string, series []string, ms ...measure) ([]runs, []float64, error) {
	before, err := b.metrics(url, series...)
	if err != nil {
		return nil, nil, err
	}
	rs, err := b.compare(ms...)
	if err != nil {
		return nil, nil, err
	}
	grown, err := b.metrics(url, series...)
	if err != nil {
		return nil, nil, err
	}
	for i := range grown {
		grown[i] -= before[i]
	}
	return rs, grown, nil
}

func (b *bench) hot() error {
	if err := b.warm(b.wrk("hot counter", b.url+hotPath, targetConns, postScript),
		b.raw("raw hot counter", rawLastInsertID, targetConns, 1)); err != nil {
		return err
	}
	for _, n := range b.conns {
		logf("hot counter, %d connections", n)
		ms := []measure{
			b.wrk("hot counter", b.url+hotPath, n, postScript),
			b.raw("raw hot counter", rawLastInsertID, n, 1),
			b.raw("raw SERIALIZABLE hot counter", rawSerializable, n, 1),
		}
		if n == targetConns {
			ms = append(ms, b.wrk("/healthz", b.url+"/healthz", n, ""))
		}
		rs, err := b.compare(ms...)
		if err != nil {
			return err
		}
		row := hotRow{conns: n, http: rs[0].byRPS(), raw: rs[1].byRPS(), ser: rs[2].byRPS()}
		if n == targetConns {
			healthz := rs[3].byRPS()
			row.healthz = &healthz
		}
		b.r.hot = append(b.r.hot, row)
	}
	return nil
}

func (b *bench) latency() error {
	// Each side has a counter of its own, created by its first request.
	rs, err := b.compare(
		b.wrk("coalescing off", *b.urls["nocoalesce"]+"/v1/counters/bench%2Fidle-off/increment", 1, postScript),
		b.wrk("coalescing on", b.url+"/v1/counters/bench%2Fidle-on/increment", 1, postScript))
	if err != nil {
		return err
	}
	b.r.latency = &latencyResult{off: rs[0].byP50(), on: rs[1].byP50()}
	return nil
}

func (b *bench) uniform() error {
	ms := []measure{
		b.wrk("1,000 counters", b.url, targetConns, uniformScript("POST", uniformPrefix, "/increment", uniformCounters)),
		b.raw("raw 1,000 counters", rawLastInsertID, targetConns, uniformCounters),
		b.wrk("hot counter", b.url+hotPath, targetConns, postScript),
	}
	if err := b.warm(ms...); err != nil {
		return err
	}
	rs, err := b.compare(ms...)
	if err != nil {
		return err
	}
	b.r.uniform = &uniformResult{http: rs[0].byRPS(), raw: rs[1].byRPS(), hot: rs[2].byRPS()}
	return nil
}

func (b *bench) read() error {
	// A GET of a counter that does not exist is a 404, a bad answer.
	if _, err := b.call("POST", b.url+readPath+"/increment", http.StatusOK); err != nil {
		return err
	}
	noCache := *b.urls["nocache"]
	get, getNoCache := b.wrk("cached GET", b.url+readPath, targetConns, ""), b.wrk("GET without cache", noCache+readPath, targetConns, "")
	if err := b.warm(get, getNoCache); err != nil {
		return err
	}
	rs, cache, err := b.compareCounting(b.url, []string{`counters_cache_hits_total{view="counter"}`, `counters_cache_misses_total{view="counter"}`},
		b.wrk("/healthz", b.url+"/healthz", targetConns, ""), get,
		b.wrk("/healthz without cache", noCache+"/healthz", targetConns, ""), getNoCache)
	if err != nil {
		return err
	}
	b.r.read = &readResult{healthz: rs[0].byRPS(), get: rs[1].byRPS(), noCacheHealthz: rs[2].byRPS(), getNoCache: rs[3].byRPS(),
		cacheHits: cache[0], cacheMisses: cache[1]}
	return nil
}

// leases are the cache leases the lease scenario compares, each an
// instance of its own ("lease" + the duration, COUNTERS_CACHE_LEASE).
var leases = []string{"250ms", "1s", "5s"}

func (b *bench) lease() error {
	// A GET of a counter that does not exist is a 404, a bad answer: the
	// warm-up's increments create them (all 1,000, at thousands a second).
	if err := b.warm(b.wrk("lease counters", b.url, targetConns, uniformScript("POST", leasePrefix, "/increment", uniformCounters))); err != nil {
		return err
	}
	series := []string{`counters_cache_hits_total{view="counter"}`, `counters_cache_misses_total{view="counter"}`}
	var ms []measure
	var urls []string
	for _, l := range leases {
		url := *b.urls["lease"+l]
		urls = append(urls, url)
		ms = append(ms, b.wrk("GET of 1,000 counters, lease "+l, url, targetConns, uniformScript("GET", leasePrefix, "", uniformCounters)))
	}
	if err := b.warm(ms...); err != nil {
		return err
	}
	before := make([][]float64, len(urls))
	for i, u := range urls {
		var err error
		if before[i], err = b.metrics(u, series...); err != nil {
			return err
		}
	}
	rs, err := b.compare(ms...)
	if err != nil {
		return err
	}
	for i, u := range urls {
		after, err := b.metrics(u, series...)
		if err != nil {
			return err
		}
		b.r.lease = append(b.r.lease, leaseRow{lease: leases[i], get: rs[i].byRPS(), hits: after[0] - before[i][0], misses: after[1] - before[i][1]})
	}
	return nil
}

func (b *bench) hits() error {
	on := b.wrk("hits, limits and visitors on", b.url+hitsPath, targetConns, visitorsScript)
	off := b.wrk("hits, limits and visitors off", *b.urls["nolimits"]+hitsPath, targetConns, visitorsScript)
	unlabelled := b.wrk("hits, breakdowns off (no labels)", *b.urls["nobreakdowns"]+hitsPath, targetConns, visitorsScript)
	fresh := b.wrk("hits, limits and visitors on, every hit a new User-Agent", b.url+hitsPath, targetConns, newAgentsScript)
	ms := []measure{on, off, unlabelled, fresh}
	if b.abacusURL != "" {
		ms = append(ms,
			b.wrk("hits, Abacus with its limiter", b.abacusURL+abacusHitPath, targetConns, visitorsScript),
			b.wrk("hits, Abacus with its limiter, every hit a new User-Agent", b.abacusURL+abacusHitPath, targetConns, newAgentsScript))
	}
	if err := b.warm(ms...); err != nil {
		return err
	}
	// A limit that cannot reach Redis in time lets the hit through
	// unchecked: count those, or a slow Redis would pass for a cheap one.
	rs, unchecked, err := b.compareCounting(b.url, []string{"counters_hits_limit_errors_total"}, ms...)
	if err != nil {
		return err
	}
	b.r.hits = &hitsResult{on: rs[0].byRPS(), off: rs[1].byRPS(), unlabelled: rs[2].byRPS(), fresh: rs[3].byRPS(), unchecked: unchecked[0]}
	if len(rs) > 4 {
		abacus, abacusFresh := rs[4].byRPS(), rs[5].byRPS()
		b.r.hits.abacus, b.r.hits.abacusFresh = &abacus, &abacusFresh
	}
	return nil
}

// keys compares the hot counter sent with an API key scoped to its prefix,
// which is looked up (then believed for a while) and checked against the
// name, with the admin token, which is only compared: what scoping costs.
func (b *bench) keys() error {
	url := *b.urls["token"]
	admin := "Bearer " + b.adminToken
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, err := call(ctx, b.client, "POST", url+"/v1/keys", `{"name": "bench", "scopes": ["write"], "prefixes": ["bench/"]}`,
		http.StatusCreated, "Authorization: "+admin)
	if err != nil {
		return err
	}
	var key struct{ Secret string }
	if err := json.Unmarshal(body, &key); err != nil {
		return err
	}
	scoped := b.wrk("hot counter, scoped key", url+keyedPath, targetConns, bearerScript("Bearer "+key.Secret))
	full := b.wrk("hot counter, admin token", url+keyedPath, targetConns, bearerScript(admin))
	if err := b.warm(scoped, full); err != nil {
		return err
	}
	rs, err := b.compare(scoped, full)
	if err != nil {
		return err
	}
	b.r.keys = &keysResult{scoped: rs[0].byRPS(), admin: rs[1].byRPS()}
	return nil
}

func (b *bench) tickets() error {
	dsn, err := b.ticketsDSN()
	if err != nil {
		return err
	}
	w := ticketWorkload{boards: b.ticketBoards, workers: b.ticketWorkers, each: b.ticketsEach, description: strings.Repeat("d", 100)}
	// A deadline for each round, so that a service or MySQL that stops
	// answering fails the benchmark instead of hanging it.
	round := func(measure func(context.Context) (load, error)) func() (load, error) {
		return func() (load, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			return measure(ctx)
		}
	}
	rs, err := alternate(b.reps,
		round(func(ctx context.Context) (load, error) { return w.service(ctx, b.url) }),
		round(func(ctx context.Context) (load, error) { return w.raw(ctx, dsn) }))
	if err != nil {
		return err
	}
	b.r.tickets = &ticketsResult{workload: w, service: rs[0].byRPS(), raw: rs[1].byRPS()}
	return nil
}

// rss reads the service's high-water mark of resident memory.
func (b *bench) rss() (err error) {
	b.r.peakRSS, err = peakRSS(b.pid)
	return err
}
