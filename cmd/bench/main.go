// Command bench measures running instances of the service against each
// other and against the raw techniques the service replaces, and prints a
// table of figures and ratios (also written as Markdown, with an SVG chart
// of the hot counter). The benchmark is a list of named scenarios; -scenario
// picks some of them. scripts/bench starts MariaDB, Redis and the instances
// the chosen scenarios need (it asks this command which, with -instances),
// then runs it.
//
// Figures that are compared are measured alternately within one run, and
// each is the median of -reps runs.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A scenario is one named part of the benchmark. needs names the instances
// of the service it measures besides -url (each given by -url-<name>), and
// raw says it needs -dsn for a raw baseline.
type scenario struct {
	name, about string
	needs       []string
	raw         bool
	run         func(*bench) error
}

// scenarios run in this order, whatever order -scenario names them in:
// tickets leaves MySQL with many rows to purge, so it comes after the HTTP
// scenarios, and rss reads the service's peak memory after all the others.
var scenarios = []scenario{
	{"hot", "one counter at each of -conns, against raw LAST_INSERT_ID and SERIALIZABLE increments (and at 64 against /healthz)", nil, true, (*bench).hot},
	{"latency", "one connection: increments with coalescing on against off (p50)", []string{"nocoalesce"}, false, (*bench).latency},
	{"uniform", "1,000 counters at 64 connections, against one counter and against raw increments", nil, true, (*bench).uniform},
	{"read", "GET of a counter from the cache, and without cache, against /healthz", []string{"nocache"}, false, (*bench).read},
	{"lease", "GET of 1,000 counters from the cache at leases of 250ms, 1s and 5s: rate and hit ratio", []string{"lease250ms", "lease1s", "lease5s"}, false, (*bench).lease},
	{"hits", "page hits from distinct visitors: the default abuse limits and visitors against none, labelled (breakdowns on) against not, and against Abacus with its limiter (-url-abacus)", []string{"nolimits", "nobreakdowns"}, false, (*bench).hits},
	{"history", "increments with history against without (hot, 1,000 counters), a year of 10,000 counters' history rolled up, reads from it (p50, p99), bytes per counter per year at three activity levels, and the hot counter with a retention pass beside it against alone", []string{"nohistory"}, false, (*bench).history},
	{"breakdowns", "the hot counter with 8 labels and without against an instance with breakdowns off (alternating), and p50 of a 30-day breakdown of a 1,000-counter prefix seeded with history and labels", []string{"nobreakdowns"}, false, (*bench).breakdowns},
	{"before", "increments, history on (hot, 1,000 counters), and page hits, against the code of -before-commit (served as -url-before)", []string{"before"}, false, (*bench).before},
	{"keys", "the hot counter at 64 connections with an API key scoped to its prefix against the admin token", []string{"token"}, false, (*bench).keys},
	{"alerts", "the hot counter and page hits with 100 rate and silence alerts registered against none, alternating, on an instance that evaluates them every 5 s (-url-alerts)", []string{"alerts"}, false, (*bench).alerts},
	{"webhooks", "the hot counter watched by 100 hooks that never cross against one no hook watches, and webhook events delivered per second to a local receiver", nil, false, (*bench).webhooks},
	{"import", "a million lines, gzipped and streamed, into a fresh instance: lines/s (mode create; overwrite, atomic) and its peak RSS", []string{"import"}, false, (*bench).imports},
	{"live", "hot counter increments with 1,000 live-update streams on it against none, then 10,000 idle streams: RSS and goroutines", []string{"live"}, false, (*bench).live},
	{"cost", "what a request costs at 64 connections (/healthz, the hot counter, 1,000 counters, page hits with the limits and visitors on and off): CPU µs of the service (-pid; -pid-nolimits for -url-nolimits), MariaDB (-pid-mysql) and Redis (-pid-redis), the goroutines the service woke and the statements it sent", []string{"nolimits"}, false, (*bench).cost},
	{"cores", "the service (-pid) pinned to 1, 2, 4, ... and all cores (taskset): 1,000 counters, the hot counter and page hits at 64 connections at each", nil, false, (*bench).cores},
	{"tickets", "the seed's ticket workload through the service against the seed's own technique", nil, true, (*bench).tickets},
	{"rss", "peak resident memory of the service (-pid) over the whole run", nil, false, (*bench).rss},
}

// instances are the services besides -url that scenarios may need; the
// flag of each is -url-<name>.
var instances = []struct{ name, about string }{
	{"nocoalesce", "the same service with COUNTERS_COALESCE=false"},
	{"nocache", "the same service without Redis (COUNTERS_REDIS_URL empty)"},
	{"nolimits", "the same service with COUNTERS_HITS_RATE_LIMIT=0, COUNTERS_HITS_DEDUP_WINDOW=0s and COUNTERS_VISITORS=false"},
	{"nohistory", "the same service with COUNTERS_HISTORY=false"},
	{"nobreakdowns", "the same service with COUNTERS_BREAKDOWNS=false: page hits carry no labels"},
	{"token", "the same service with COUNTERS_API_TOKEN set to -admin-token"},
	{"lease250ms", "the same service with COUNTERS_CACHE_LEASE=250ms"},
	{"lease1s", "the same service with COUNTERS_CACHE_LEASE=1s"},
	{"lease5s", "the same service with COUNTERS_CACHE_LEASE=5s"},
	{"alerts", "the same service with COUNTERS_WEBHOOK_ALERTS_EVERY=5s, which only the alerts scenario uses"},
	{"before", "the code of -before-commit, built from a git worktree of it, on a database of its own"},
	{"import", "a fresh instance of the same service, which only the import scenario uses (-pid-import: its process id)"},
	{"live", "the same service with COUNTERS_LIVE_MAX_PER_ADDR=20000 (every stream comes from 127.0.0.1), which only the live scenario uses (-pid-live: its process id)"},
}

type config struct {
	scenarios                                []scenario
	url                                      string
	urls                                     map[string]*string // by instance name
	dsn                                      string
	serviceDSN                               string // the database of -url, which the history scenario seeds
	pid                                      int
	mysqlPID, redisPID                       int // of MariaDB and Redis, for the cost scenario; 0: not measured
	importPID                                int // process id of -url-import
	livePID                                  int // process id of -url-live
	nolimitsPID                              int // process id of -url-nolimits, for the cost scenario; 0: its CPU is not measured
	conns                                    []int
	duration                                 time.Duration
	reps                                     int
	out                                      string
	ticketBoards, ticketWorkers, ticketsEach int
	adminToken                               string
	beforeCommit                             string // what -url-before runs
	abacusURL                                string // Abacus with its limiter on, for the hits scenario; "" skips it
}

func main() {
	c, listInstances, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if listInstances {
		for _, name := range c.needs() {
			if name == "before" {
				name += " " + c.beforeCommit
			}
			fmt.Println(name)
		}
		return
	}
	if err = c.check(); err == nil {
		err = run(c)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, bool, error) {
	c := config{urls: map[string]*string{}}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	names := fs.String("scenario", "all", "comma-separated scenarios to run (listed above), or all")
	listInstances := fs.Bool("instances", false, "print the instances besides -url that the chosen scenarios need, one a line (before followed by -before-commit), and exit")
	fs.StringVar(&c.url, "url", "http://127.0.0.1:8080", "the service under test, configured by default")
	for _, in := range instances {
		c.urls[in.name] = fs.String("url-"+in.name, "", in.about)
	}
	fs.StringVar(&c.dsn, "dsn", "", "MySQL DSN of a scratch database for the raw baselines; it is dropped and recreated, and so is <its name>_tickets")
	fs.StringVar(&c.serviceDSN, "service-dsn", "", "MySQL DSN of -url's own database, where the history scenario seeds a year of history")
	fs.IntVar(&c.pid, "pid", 0, "process id of -url, for its peak RSS")
	fs.IntVar(&c.mysqlPID, "pid-mysql", 0, "process id of MariaDB, for the cost scenario (0: its figures are left out)")
	fs.IntVar(&c.redisPID, "pid-redis", 0, "process id of Redis, for the cost scenario (0: its figures are left out)")
	fs.IntVar(&c.importPID, "pid-import", 0, "process id of -url-import, for its peak RSS")
	fs.IntVar(&c.livePID, "pid-live", 0, "process id of -url-live, for its RSS with idle streams")
	fs.IntVar(&c.nolimitsPID, "pid-nolimits", 0, "process id of -url-nolimits, for the cost scenario's page hits with the limits off (0: its CPU is left out)")
	conns := fs.String("conns", "1,16,64,256", "connection counts of the hot scenario")
	fs.DurationVar(&c.duration, "duration", 4*time.Second, "length of each measurement")
	fs.IntVar(&c.reps, "reps", 3, "repetitions of each measurement; the report shows the median")
	fs.StringVar(&c.out, "out", "bench-results", "directory for results.md and throughput.svg")
	fs.IntVar(&c.ticketBoards, "ticket-boards", 2, "boards of the tickets scenario")
	fs.IntVar(&c.ticketWorkers, "ticket-workers", 10, "concurrent workers per board")
	fs.IntVar(&c.ticketsEach, "tickets", 1000, "tickets each worker creates")
	fs.StringVar(&c.beforeCommit, "before-commit", "d8e5ecf", "the commit -url-before runs: the code before history, API keys and the cache lease (scripts/bench builds and serves it)")
	fs.StringVar(&c.abacusURL, "url-abacus", "", "Abacus (github.com/JasonLovesDoggo/abacus) with RATE_LIMIT_ENABLED=true, which the hits scenario compares with; empty skips it (scripts/bench starts the binary that ABACUS names)")
	fs.StringVar(&c.adminToken, "admin-token", "bench-admin-token", "COUNTERS_API_TOKEN of the token instance (scripts/bench sets it to the default)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: bench [flags]\n\nScenarios:\n")
		for _, s := range scenarios {
			fmt.Fprintf(fs.Output(), "  %-8s %s\n", s.name, s.about)
		}
		fmt.Fprintf(fs.Output(), "\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, false, err
	}
	if fs.NArg() > 0 {
		return c, false, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, s := range strings.Split(*conns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return c, false, fmt.Errorf("bad -conns %q", *conns)
		}
		c.conns = append(c.conns, n)
	}
	var err error
	c.scenarios, err = pick(*names)
	if c.duration <= 0 || c.reps < 1 || c.ticketBoards < 1 || c.ticketWorkers < 1 || c.ticketsEach < 1 {
		err = errors.Join(err, errors.New("-duration, -reps, -ticket-boards, -ticket-workers and -tickets must be positive"))
	}
	return c, *listInstances, err
}

// pick resolves -scenario into scenarios, in their running order.
func pick(list string) ([]scenario, error) {
	if strings.TrimSpace(list) == "all" {
		return scenarios, nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		want[strings.TrimSpace(name)] = true
	}
	var picked []scenario
	var known []string
	for _, s := range scenarios {
		if want[s.name] {
			picked = append(picked, s)
			delete(want, s.name)
		}
		known = append(known, s.name)
	}
	for name := range want {
		return nil, fmt.Errorf("-scenario: unknown %q; known are %s, or all", name, strings.Join(known, ", "))
	}
	return picked, nil
}

// needs lists the instances besides -url that the chosen scenarios measure.
func (c config) needs() []string {
	var out []string
	for _, in := range instances {
		if slices.ContainsFunc(c.scenarios, func(s scenario) bool { return slices.Contains(s.needs, in.name) }) {
			out = append(out, in.name)
		}
	}
	return out
}

// check says which flag a chosen scenario is missing.
func (c config) check() error {
	var errs []error
	for _, s := range c.scenarios {
		for _, name := range s.needs {
			if *c.urls[name] == "" {
				errs = append(errs, fmt.Errorf("-scenario %s needs -url-%s", s.name, name))
			}
		}
		if s.raw && c.dsn == "" {
			errs = append(errs, fmt.Errorf("-scenario %s needs -dsn", s.name))
		}
		if (s.name == "history" || s.name == "breakdowns") && c.serviceDSN == "" {
			errs = append(errs, fmt.Errorf("-scenario %s needs -service-dsn", s.name))
		}
		if s.name == "import" && c.importPID <= 0 {
			errs = append(errs, errors.New("-scenario import needs -pid-import"))
		}
		if s.name == "live" && c.livePID <= 0 {
			errs = append(errs, errors.New("-scenario live needs -pid-live"))
		}
		if (s.name == "rss" || s.name == "cores" || s.name == "cost") && c.pid <= 0 {
			errs = append(errs, fmt.Errorf("-scenario %s needs -pid", s.name))
		}
	}
	return errors.Join(errs...)
}

// bench is one run of the chosen scenarios.
type bench struct {
	config
	warmup time.Duration
	warmed map[string]bool
	rawDB  *sql.DB // the raw counter baselines' database, opened on first use
	client *http.Client
	r      report

	pinnedTo int // the cores the cores scenario last pinned -pid to; 0: none
}

func run(c config) error {
	b := &bench{
		config: c,
		// Long enough to create the rows and fill the pools and caches,
		// short enough for a quick look.
		warmup: min(max(c.duration/2, time.Second), 2*time.Second),
		warmed: map[string]bool{},
		client: &http.Client{Timeout: 30 * time.Second},
	}
	defer func() {
		if b.rawDB != nil {
			b.rawDB.Close()
		}
	}()
	for _, s := range c.scenarios {
		logf("scenario %s: %s", s.name, s.about)
		if err := s.run(b); err != nil {
			return fmt.Errorf("scenario %s: %w", s.name, err)
		}
	}
	return b.r.write(c.out)
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...) }

// rawCounters opens the raw counter baselines' database once per run.
func (b *bench) rawCounters() (*sql.DB, error) {
	if b.rawDB != nil {
		return b.rawDB, nil
	}
	db, err := openRaw(context.Background(), b.dsn, 1)
	if err != nil {
		return nil, err
	}
	b.rawDB = db
	return db, nil
}

// ticketsDSN names the tickets scenario's raw database: -dsn's with
// "_tickets" appended, so that each round can drop it without touching
// the raw counters.
func (b *bench) ticketsDSN() (string, error) {
	cfg, err := mysql.ParseDSN(b.dsn)
	if err != nil {
		return "", err
	}
	cfg.DBName += "_tickets"
	return cfg.FormatDSN(), nil
}
