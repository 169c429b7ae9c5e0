package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// result is what one countersctl run did.
type result struct {
	out, err string
	code     int
}

// ctl runs countersctl in this process with the environment vars
// ("NAME=value") and args.
func ctl(t *testing.T, vars []string, args ...string) result {
	t.Helper()
	env := map[string]string{}
	for _, v := range vars {
		k, val, _ := strings.Cut(v, "=")
		env[k] = val
	}
	if args == nil {
		// As main's os.Args[1:]: cobra reads nil arguments as "take the
		// process's", here the test binary's flags, so that the run with
		// no arguments answered according to how go test was called
		// (-test.parallel 4, its value a word of its own, was a command).
		args = []string{}
	}
	var out, errw bytes.Buffer
	code := run(context.Background(), args, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errw)
	return result{out.String(), errw.String(), code}
}

// step is one command of a session and what it must print.
type step struct {
	args []string
	out  string // stdout exactly, or a regexp when it starts with ^
	code int
	err  string // a part of stderr
}

func (s step) check(t *testing.T, r result) {
	t.Helper()
	cmd := strings.Join(s.args, " ")
	if r.code != s.code {
		t.Errorf("countersctl %s: exit %d, want %d\nstdout: %s\nstderr: %s", cmd, r.code, s.code, r.out, r.err)
	}
	if strings.HasPrefix(s.out, "^") {
		if !regexp.MustCompile(s.out).MatchString(r.out) {
			t.Errorf("countersctl %s printed %q, want it to match %s", cmd, r.out, s.out)
		}
	} else if r.out != s.out {
		t.Errorf("countersctl %s printed %q, want %q", cmd, r.out, s.out)
	}
	if !strings.Contains(r.err, s.err) || (s.err == "" && r.err != "") {
		t.Errorf("countersctl %s: stderr %q, want %q", cmd, r.err, s.err)
	}
}

func runSession(t *testing.T, vars []string, steps []step) {
	t.Helper()
	for _, s := range steps {
		s.check(t, ctl(t, vars, s.args...))
	}
}

func args(s ...string) []string { return s }

// Each counter command prints its answer as documented and exits 0, or
// names the service's error and code on stderr and exits 1.
func TestCounterCommandsPrintTheirAnswers(t *testing.T) {
	t.Parallel()
	svc := apptest.New(t)
	vars := []string{"COUNTERS_URL=" + svc.URL}
	lines := filepath.Join(t.TempDir(), "moved.jsonl")
	os.WriteFile(lines, []byte(`{"name":"moved/blog","value":1532}`+"\n"+`{"name":"moved/faq","value":"lots"}`+"\n"), 0o600)
	runSession(t, vars, []step{
		{args: args("inc", "docs/index.html"), out: "1\n"},
		{args: args("inc", "books/Red Horse Hill", "12"), out: "12\n"},
		{args: args("inc", "books/Red Horse Hill", "-2"), out: "10\n"},
		{args: args("get", "books/Red Horse Hill"), out: "10\n"},
		{args: args("get", "books/none"), code: 1, err: "(not_found)"},
		{args: args("set", "stock/bulldozer", "1", "--min", "0"), out: "1\n"},
		{args: args("inc", "stock/bulldozer", "-2"), code: 1, err: "(out_of_range)"},
		{args: args("set", "--min", "none", "stock/bulldozer", "-5"), out: "-5\n"},
		{args: args("set", "launch", "0", "--create-only"), out: "0\n"},
		{args: args("set", "launch", "0", "--create-only"), code: 1, err: "(conflict)"},
		{args: args("rm", "launch"), out: ""},
		{args: args("rm", "launch"), code: 1, err: "(not_found)"},
		{args: args("inc", "_tickets/x"), code: 1, err: "(permission_denied)"},
		{args: args("ls", "books/"), out: "books/Red Horse Hill\t10\n"},
		{args: args("ls"), out: "books/Red Horse Hill\t10\ndocs/index.html\t1\nstock/bulldozer\t-5\n"},
		{args: args("history", "books/Red Horse Hill", "--tz", "Europe/Berlin"), out: `^(?s)^([0-9T:+-]{20,25}\t0\n){28,29}([0-9T:+-]{20,25}\t-?[0-9]+\n){1,2}$`}, // 10 today (and yesterday, across midnight)
		{args: args("history", "books/", "--prefix", "--step", "month", "--from", "2026-01", "--to", "2026-03"), out: "2026-01-01T00:00:00Z\t0\n2026-02-01T00:00:00Z\t0\n"},
		{args: args("history", "books/Red Horse Hill", "--step", "week"), code: 1, err: "(invalid_argument)"},
		{args: args("reset", "books/"), out: "1\n"},
		{args: args("export", "books/"), out: `^\{"name":"books/Red Horse Hill","value":0,"created_at":"[^"]+","updated_at":"[^"]+"\}\n$`},
		{args: args("import", lines), out: "read 2, created 1, overwritten 0, skipped 0, refused 1\n" +
			"2\tmoved/faq\trefused\tmalformed\t\"value\" must be an integer between -9223372036854775808 and 9223372036854775807.\n"},
		{args: args("import", lines, "--mode", "overwrite", "--atomic"), code: 1, err: "(invalid_argument)",
			out: "read 2, created 0, overwritten 0, skipped 0, refused 1\n" +
				"2\tmoved/faq\trefused\tmalformed\t\"value\" must be an integer between -9223372036854775808 and 9223372036854775807.\n"},
		{args: args("get", "moved/blog"), out: "1532\n"},
		// A script's own retry with its key applies the write once.
		{args: args("inc", "sales/x", "5", "--idempotency-key", "order-1"), out: "5\n"},
		{args: args("inc", "sales/x", "5", "--idempotency-key", "order-1"), out: "5\n"},
		{args: args("inc", "sales/x", "6", "--idempotency-key", "order-1"), code: 1, err: "(conflict)"},
		{args: args("get", "sales/x"), out: "5\n"},
		// Labels ride on increments and come back as a breakdown.
		{args: args("inc", "shop/book", "3", "--label", "channel=web", "--label", "region=EU"), out: "3\n"},
		{args: args("inc", "shop/book", "2", "--label", "channel=shop"), out: "5\n"},
		{args: args("inc", "shop/book", "--label", "Channel=web"), code: 1, err: "(invalid_argument)"},
		{args: args("inc", "shop/book", "--label", "channel"), code: 2, err: "KEY=VALUE"},
		{args: args("breakdown", "shop/book", "--by", "channel"), out: "web\t3\nshop\t2\n"},
		{args: args("breakdown", "shop/book", "--by", "region", "--limit", "1"), out: "EU\t3\n(more)\t2\n"},
		{args: args("breakdown", "shop/", "--prefix", "--by", "name"), out: "shop/book\t5\n"},
		{args: args("breakdown", "shop/book"), code: 2, err: "--by"},
		// --json prints the service's own answer, wherever the flag stands.
		{args: args("--json", "inc", "docs/index.html"), out: `{"name":"docs/index.html","value":2}` + "\n"},
		{args: args("inc", "docs/index.html", "--json"), out: `{"name":"docs/index.html","value":3}` + "\n"},
		{args: args("get", "nothing", "--json"), code: 1, err: "(not_found)", out: `^\{"error":\{"code":"not_found",`},
		{args: args("ls", "docs/", "--json"), out: `^\{"counters":\[\{"name":"docs/index.html","value":3,.*\],"next_after":null\}` + "\n$"},
	})
}

// ls follows every page: more counters than the largest page.
func TestLsPrintsEveryPage(t *testing.T) {
	t.Parallel()
	svc := apptest.New(t)
	var lines, want strings.Builder
	for i := range 1005 {
		fmt.Fprintf(&lines, `{"name":"many/%04d","value":%d}`+"\n", i, i)
		fmt.Fprintf(&want, "many/%04d\t%d\n", i, i)
	}
	file := filepath.Join(t.TempDir(), "many.jsonl")
	os.WriteFile(file, []byte(lines.String()), 0o600)
	vars := []string{"COUNTERS_URL=" + svc.URL}
	runSession(t, vars, []step{
		{args: args("import", file), out: "read 1005, created 1005, overwritten 0, skipped 0, refused 0\n"},
		{args: args("ls", "many/"), out: want.String()},
	})
}

// Keys, boards and tickets.
func TestKeyAndTicketCommands(t *testing.T) {
	t.Parallel()
	svc := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = "admin-token" })
	admin := []string{"COUNTERS_URL=" + svc.URL, "COUNTERS_TOKEN=admin-token"}
	r := ctl(t, admin, "keys", "create", "--name", "shop A", "--scopes", "read,write", "--prefixes", "shopA/", "--companies", "1")
	if r.code != 0 || !regexp.MustCompile(`^ck_[A-Za-z0-9_-]{43}\n$`).MatchString(r.out) {
		t.Fatalf("keys create: exit %d, printed %q, %s", r.code, r.out, r.err)
	}
	shop := []string{"COUNTERS_URL=" + svc.URL, "COUNTERS_TOKEN=" + strings.TrimSpace(r.out)}
	runSession(t, admin, []step{
		{args: args("keys", "ls"), out: "1\tshop A\tread,write\tshopA/\n"},
		{args: args("keys", "create", "--scopes", "read"), code: 2, err: "needs --name and --scopes"},
		{args: args("boards", "create", "--company", "1", "ninja", "Ninja Board"), out: "1\tNINJA\n"},
		{args: args("boards", "create", "--company", "1", "ninja", "Again"), code: 1, err: "(conflict)"},
		{args: args("boards", "get", "1"), out: "1\tNINJA\tNinja Board\n"},
	})
	runSession(t, shop, []step{
		{args: args("inc", "shopA/sales"), out: "1\n"},
		{args: args("inc", "shopB/sales"), code: 1, err: "(permission_denied)"},
		{args: args("tickets", "create", "1", "Throwing stars miss", "--description", "Every third one."), out: "NINJA-1\n"},
		{args: args("tickets", "create", "1", "Smoke bomb fizzles"), out: "NINJA-2\n"},
		{args: args("tickets", "ls", "1"), out: "NINJA-1\tThrowing stars miss\nNINJA-2\tSmoke bomb fizzles\n"},
		{args: args("tickets", "get", "1", "2"), out: "NINJA-2\tSmoke bomb fizzles\n"},
		{args: args("tickets", "get", "--company", "1", "NINJA-1"), out: "NINJA-1\tThrowing stars miss\n"},
		{args: args("tickets", "rm", "1", "1"), out: ""},
		{args: args("tickets", "get", "1", "1"), code: 1, err: "(not_found)"},
		{args: args("keys", "ls"), code: 1, err: "(permission_denied)"},
	})
	runSession(t, admin, []step{
		{args: args("keys", "rm", "1"), out: ""},
		{args: args("keys", "ls"), out: ""},
	})
	runSession(t, shop, []step{{args: args("get", "shopA/sales"), code: 1, err: "(unauthenticated)"}})
	// The flags win over the environment, before or after the command.
	runSession(t, []string{"COUNTERS_URL=http://127.0.0.1:1", "COUNTERS_TOKEN=wrong"}, []step{
		{args: args("--url", svc.URL, "--token", "admin-token", "get", "shopA/sales"), out: "1\n"},
		{args: args("get", "shopA/sales", "--url="+svc.URL, "--token=admin-token"), out: "1\n"},
		{args: args("get", "shopA/sales", "--url", svc.URL), code: 1, err: "(unauthenticated)"},
		{args: args("get", "shopA/sales"), code: 1, err: "connection refused"},
	})
}

// keys ls tells a key that may touch every name (the prefix "") from one
// that may touch none (boards and tickets only).
func TestKeysLsTellsEveryNameFromNoName(t *testing.T) {
	t.Parallel()
	svc := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = "admin-token" })
	admin := []string{"COUNTERS_URL=" + svc.URL, "COUNTERS_TOKEN=admin-token"}
	for _, k := range [][]string{
		{"--name", "reports", "--scopes", "read", "--prefixes", ""},
		{"--name", "boards", "--scopes", "read", "--companies", "7"},
		{"--name", "shops", "--scopes", "read", "--prefixes", "shopA/,,shopB/"},
	} {
		if r := ctl(t, admin, append(args("keys", "create"), k...)...); r.code != 0 {
			t.Fatalf("keys create %v: exit %d: %s", k, r.code, r.err)
		}
	}
	runSession(t, admin, []step{{args: args("keys", "ls"),
		out: "1\treports\tread\t\"\"\n2\tboards\tread\t\n3\tshops\tread\tshopA/,\"\",shopB/\n"}})
}

// Mistakes in the command line exit 2 and say what is wrong; none of them
// reaches the service.
func TestUsageErrorsExitTwo(t *testing.T) {
	t.Parallel()
	vars := []string{"COUNTERS_URL=http://127.0.0.1:1"}
	for _, s := range []step{
		{args: args("inc"), code: 2, err: "inc takes NAME [BY]"},
		{args: args("inc", "a", "b", "c"), code: 2, err: "inc takes NAME [BY]"},
		{args: args("inc", "a", "lots"), code: 2, err: `BY must be an integer, not "lots"`},
		{args: args("frobnicate"), code: 2, err: `unknown command "frobnicate"`},
		{args: args("keys"), code: 2, err: "keys needs a subcommand"},
		{args: args("keys", "burn"), code: 2, err: `unknown command "keys burn"`},
		{args: args("set", "a", "1", "--min", "low"), code: 2, err: `--min must be an integer or none`},
		{args: args("get", "a", "--bogus"), code: 2, err: "unknown flag: --bogus"},
		{args: args("get", "a", "--timeout"), code: 2, err: "flag needs an argument: --timeout"},
		{args: args("get", "a", "--timeout", "soon"), code: 2, err: `invalid argument "soon" for "--timeout"`},
		{args: args("import", "f", "--mode", "replace"), code: 2, err: `--mode must be create or overwrite`},
		{args: args("get", "a", "--url", "localhost:8080"), code: 2, err: "must be http://host"},
		{args: args("webhooks", "create", "--endpoint", "https://x.example"), code: 2, err: "one of --name and --prefix"},
		{args: args("webhooks", "create", "--endpoint", "https://x.example", "--name", "a", "--window", "1h", "--above", "many"), code: 2, err: "--above must be an integer"},
		{args: args("webhooks", "rotate"), code: 2, err: "webhooks rotate takes ID"},
	} {
		s.check(t, ctl(t, vars, s.args...))
	}
	r := ctl(t, vars)
	if r.code != 0 || !strings.Contains(r.out, "\n  get ") || !strings.Contains(r.out, "Available Commands") || !strings.Contains(r.out, "Exit status") {
		t.Errorf("no arguments: exit %d, printed %q; want the usage and 0", r.code, r.out)
	}
}

// An increment whose answer a proxy dropped after the service committed it
// still prints the value, and the counter moved once.
func TestIncThroughAProxyThatDropsTheAnswerCountsOnce(t *testing.T) {
	t.Parallel()
	svc := apptest.New(t)
	proxy := svc.NewDropProxy(t, 1)
	runSession(t, []string{"COUNTERS_URL=" + proxy.URL}, []step{
		{args: args("inc", "sales/books", "2"), out: "2\n"},
		{args: args("get", "sales/books"), out: "2\n"},
	})
	if keys := proxy.Keys(); len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("Idempotency-Keys %q, want one key sent twice", keys)
	}
}

// lines is a writer that tells when a line arrives.
type lines struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	more chan struct{}
}

func newLines() *lines { return &lines{more: make(chan struct{}, 1000)} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.buf.Write(p)
	l.more <- struct{}{}
	return n, err
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitLines waits until n lines were written.
func (l *lines) waitLines(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for strings.Count(l.String(), "\n") < n {
		select {
		case <-l.more:
		case <-timeout:
			t.Fatalf("printed %q, waited for %d lines", l.String(), n)
		}
	}
}

// watch against the real service prints the value, then a line per new
// value (or "deleted"), and ends cleanly, exit 0 and nothing on stderr,
// on --timeout or when its context ends.
func TestWatchPrintsALinePerValue(t *testing.T) {
	t.Parallel()
	svc := apptest.NewWithCache(t, testenv.StartRedis(t).URL())
	vars := []string{"COUNTERS_URL=" + svc.URL}
	for _, tc := range []struct {
		name    string
		counter string
		args    []string
		end     func(cancel context.CancelFunc) // after the last line
		lines   []string                        // printed, one per change; a regexp with --json
	}{
		{"--timeout", "watched/a", args("watch", "watched/a", "--timeout", "3s"), func(context.CancelFunc) {},
			[]string{"1", "2", "3", "deleted"}},
		{"its context ends", "watched/b", args("watch", "watched/b"), func(cancel context.CancelFunc) { cancel() },
			[]string{"1", "2", "3", "deleted"}},
		{"--json", "watched/c", args("--json", "watch", "watched/c", "--timeout", "3s"), func(context.CancelFunc) {},
			[]string{`\{"name":"watched/c","value":1,"at":"[^"]+"\}`, `\{"name":"watched/c","value":2,"at":"[^"]+"\}`,
				`\{"name":"watched/c","value":3,"at":"[^"]+"\}`, `\{"name":"watched/c"\}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a counter of its own; two wait out their --timeout
			runSession(t, vars, []step{{args: args("inc", tc.counter), out: "1\n"}})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out, errw := newLines(), &bytes.Buffer{}
			code := make(chan int, 1)
			go func() {
				code <- run(ctx, tc.args, func(k string) string { return map[string]string{"COUNTERS_URL": svc.URL}[k] }, strings.NewReader(""), out, errw)
			}()
			// Each change waits for the line of the one before, so that
			// none is skipped (a stream may skip values that come faster
			// than it sends).
			for i, change := range []step{
				{args: args("inc", tc.counter), out: "2\n"},
				{args: args("inc", tc.counter), out: "3\n"},
				{args: args("rm", tc.counter)},
			} {
				out.waitLines(t, i+1)
				runSession(t, vars, []step{change})
			}
			out.waitLines(t, 4)
			tc.end(cancel)
			select {
			case c := <-code:
				if c != 0 || errw.Len() > 0 {
					t.Errorf("exit %d, stderr %q; want 0 and nothing", c, errw)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("watch did not end")
			}
			if !regexp.MustCompile("^" + strings.Join(tc.lines, "\n") + "\n$").MatchString(out.String()) {
				t.Errorf("printed %q, want the lines %q", out.String(), tc.lines)
			}
		})
	}
}

// The webhook commands against the real service: create prints the
// secret once, ls and get a line without it, a crossing is delivered to
// the receiver and shows in deliveries, enable and rm answer nothing,
// rotate prints the new secret.
func TestWebhookCommands(t *testing.T) {
	t.Parallel()
	svc := apptest.NewWithCache(t, testenv.StartRedis(t).URL(), func(c *wire.Config) { c.Webhooks.AllowPrivate = true })
	var mu sync.Mutex
	var calls []string
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, string(body))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer receiver.Close()
	endpoint := receiver.URL + "/restock"
	hook := "1\tstock/widget\t" + endpoint + "\tenabled\n"
	vars := []string{"COUNTERS_URL=" + svc.URL}
	runSession(t, vars, []step{
		{args: args("set", "stock/widget", "1"), out: "1\n"},
		{args: args("webhooks", "create", "--endpoint", endpoint, "--name", "stock/widget", "--thresholds", "0", "--direction", "down"), out: `^whsec_[A-Za-z0-9+/=]{40,}\n$`},
		{args: args("webhooks", "create", "--endpoint", "http://", "--prefix", "books/", "--every", "10"), code: 1, err: "(invalid_argument)"},
		{args: args("webhooks", "ls"), out: hook},
		{args: args("webhooks", "get", "1"), out: hook},
		{args: args("webhooks", "deliveries", "1"), out: ""},
		{args: args("inc", "stock/widget", "-1"), out: "0\n"},
	})
	deadline := time.Now().Add(20 * time.Second)
	for r := ctl(t, vars, "webhooks", "deliveries", "1", "--limit", "5"); !regexp.MustCompile("^[^\t]+\tdelivered\t1\n$").MatchString(r.out); r = ctl(t, vars, "webhooks", "deliveries", "1", "--limit", "5") {
		if time.Now().After(deadline) {
			t.Fatalf("webhooks deliveries printed %q (%q), want one delivered", r.out, r.err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	mu.Lock()
	if len(calls) != 1 || !strings.Contains(calls[0], `"data":{"name":"stock/widget","threshold":0,"direction":"down","previous":1,"value":0}`) {
		t.Errorf("the receiver got %q, want the crossing of 0 down", calls)
	}
	mu.Unlock()
	runSession(t, vars, []step{
		{args: args("webhooks", "enable", "1"), out: ""},
		{args: args("webhooks", "rotate", "1"), out: `^whsec_[A-Za-z0-9+/=]{40,}\n$`},
		{args: args("webhooks", "rotate", "2"), code: 1, err: "(not_found)"},
		{args: args("webhooks", "rm", "1"), out: ""},
		{args: args("webhooks", "rm", "1"), code: 1, err: "(not_found)"},
		{args: args("webhooks", "get", "1"), code: 1, err: "(not_found)"},
		{args: args("webhooks", "ls"), out: ""},
		{args: args("webhooks", "create", "--endpoint", endpoint, "--prefix", "stock/", "--window", "6h", "--below", "1"), out: `^whsec_[A-Za-z0-9+/=]{40,}\n$`},
		{args: args("webhooks", "create", "--endpoint", endpoint, "--prefix", "stock/", "--window", "2m", "--below", "1"), code: 1, err: "(invalid_argument)"},
		{args: args("--json", "webhooks", "get", "2"), out: `^\{"id":2,.*"prefix":"stock/","window":"6h","below":1,"created_at".*\}\n$`},
	})
}

// --timeout bounds a command, retries included: a service that never
// answers is an error (exit 1) after it, not a hang.
func TestTimeoutEndsACommandThatGetsNoAnswer(t *testing.T) {
	t.Parallel()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-stop
	}))
	defer srv.Close()
	defer close(stop)
	runSession(t, []string{"COUNTERS_URL=" + srv.URL}, []step{
		{args: args("inc", "a", "--timeout", "200ms"), code: 1, err: "no answer within --timeout 200ms"},
	})
}

// ready is a health check: 0 while the service serves and MySQL answers,
// 1 when /readyz says otherwise or nothing answers, within --timeout.
func TestReadyExitsZeroOnlyWhenTheServiceIsReady(t *testing.T) {
	t.Parallel()
	svc := apptest.New(t)
	unready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			t.Errorf("asked %s, want /readyz", r.URL.Path)
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer unready.Close()
	for _, tc := range []struct {
		name, url string
		code      int
	}{
		{"ready", svc.URL, 0},
		{"MySQL down", unready.URL, 1},
		{"nothing listening", "http://127.0.0.1:1", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			if r := ctl(t, []string{"COUNTERS_URL=" + tc.url}, "ready", "--timeout", "1s"); r.code != tc.code {
				t.Errorf("exit %d, want %d; stderr %s", r.code, tc.code, r.err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %v with --timeout 1s", d)
			}
		})
	}
}

// What users expect of a command line: --version, help per command, a
// suggestion (not the whole help) for a mistyped command, and shell
// completion.
func TestVersionHelpSuggestionsAndCompletion(t *testing.T) {
	t.Parallel()
	vars := []string{"COUNTERS_URL=http://127.0.0.1:1"}
	for _, tc := range []struct {
		args      []string
		code      int
		out, err  []string // parts of stdout and of stderr
		errAtMost int      // lines of stderr, 0: any
	}{
		{args: args("--version"), out: []string{"countersctl "}},
		{args: args("inc", "--help"), out: []string{"countersctl inc NAME [BY] [flags]", "--idempotency-key", "Global Flags:", "--json"}},
		{args: args("help", "set"), out: []string{"countersctl set NAME VALUE [flags]", "--create-only"}},
		{args: args("keys", "create", "--help"), out: []string{"countersctl keys create [flags]", "--scopes"}},
		{args: args("ins", "a"), code: 2, err: []string{`unknown command "ins"`, "Did you mean this?", "\tinc\n"}, errAtMost: 8},
		{args: args("keys", "craete"), code: 2, err: []string{`unknown command "keys craete"`, "Did you mean this?", "keys create"}, errAtMost: 8},
		{args: args("frobnicate"), code: 2, err: []string{`unknown command "frobnicate"`, "countersctl --help"}, errAtMost: 3},
		{args: args("completion", "bash"), out: []string{"bash completion"}},
		{args: args("completion", "zsh"), out: []string{"#compdef countersctl"}},
		{args: args("completion", "fish"), out: []string{"complete -c countersctl"}},
	} {
		r := ctl(t, vars, tc.args...)
		what := "countersctl " + strings.Join(tc.args, " ")
		if r.code != tc.code {
			t.Errorf("%s: exit %d, want %d\nstderr: %s", what, r.code, tc.code, r.err)
		}
		for _, want := range tc.out {
			if !strings.Contains(r.out, want) {
				t.Errorf("%s: stdout has no %q:\n%s", what, want, r.out)
			}
		}
		for _, want := range tc.err {
			if !strings.Contains(r.err, want) {
				t.Errorf("%s: stderr has no %q:\n%s", what, want, r.err)
			}
		}
		if n := strings.Count(r.err, "\n"); tc.errAtMost > 0 && n > tc.errAtMost {
			t.Errorf("%s: %d lines on stderr, want a few:\n%s", what, n, r.err)
		}
	}
}

// annotate prints the new annotation's id, annotations lists what a name
// or a prefix sees by its moment, unannotate deletes one; history and
// export print the service's CSV with --csv.
func TestAnnotationAndCSVCommands(t *testing.T) {
	t.Parallel()
	svc := apptest.New(t)
	vars := []string{"COUNTERS_URL=" + svc.URL}
	runSession(t, vars, []step{
		{args: args("inc", "books/Bulldozer", "2"), out: "2\n"},
		{args: args("annotate", "books/Bulldozer", "Price cut", "--at", "2025-04-01T09:00:00Z"), out: "1\n"},
		{args: args("annotate", "books/", "Sale", "--prefix", "--at", "2025-04-01T08:00:00+02:00"), out: "2\n"},
		{args: args("annotate", "books/Bulldozer", ""), code: 1, err: "(invalid_argument)"},
		{args: args("annotate", "books/Bulldozer", "x", "--at", "soon"), code: 2, err: "--at"},
		{args: args("annotations", "books/Bulldozer"), out: "2\t2025-04-01T06:00:00Z\tbooks/*\tSale\n1\t2025-04-01T09:00:00Z\tbooks/Bulldozer\tPrice cut\n"},
		{args: args("annotations", "books/", "--prefix", "--from", "2025-04-01T07:00:00Z"), out: "1\t2025-04-01T09:00:00Z\tbooks/Bulldozer\tPrice cut\n"},
		{args: args("unannotate", "2"), out: ""},
		{args: args("unannotate", "2"), code: 1, err: "(not_found)"},
		{args: args("annotations", "books/Bulldozer", "--from", "2025-04-02"), out: ""},
		{args: args("history", "books/Bulldozer", "--csv", "--from", "2025-04-01", "--to", "2025-04-03", "--tz", "Europe/Berlin"),
			out: "name,start,end,count\nbooks/Bulldozer,2025-04-01T00:00:00+02:00,2025-04-02T00:00:00+02:00,0\nbooks/Bulldozer,2025-04-02T00:00:00+02:00,2025-04-03T00:00:00+02:00,0\n"},
		{args: args("history", "books/", "--prefix", "--csv", "--step", "month", "--from", "2025-01", "--to", "2025-02"),
			out: "name,start,end,count\nbooks/,2025-01-01T00:00:00Z,2025-02-01T00:00:00Z,0\n"},
		{args: args("export", "books/", "--csv"), out: `^name,value,created_at,updated_at\nbooks/Bulldozer,2,[0-9TZ:.-]+,[0-9TZ:.-]+\n$`},
	})
}
