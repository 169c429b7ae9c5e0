package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"countersvc/internal/apptest"
	"countersvc/internal/config"
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
		// --json prints the service's own answer, wherever the flag stands.
		{args: args("--json", "inc", "docs/index.html"), out: `{"name":"docs/index.html","value":2}` + "\n"},
		{args: args("inc", "docs/index.html", "--json"), out: `{"name":"docs/index.html","value":3}` + "\n"},
		{args: args("get", "nothing", "--json"), code: 1, err: "(not_found)", out: `^\{"error":\{"code":"not_found",`},
		{args: args("ls", "docs/", "--json"), out: `^\{"counters":\[\{"name":"docs/index.html","value":3,.*\],"next_after":null\}` + "\n$"},
	})
}

// ls follows every page: more counters than the largest page.
func TestLsPrintsEveryPage(t *testing.T) {
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
	svc := apptest.New(t, func(c *config.Config) { c.APIToken = "admin-token" })
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
	svc := apptest.New(t, func(c *config.Config) { c.APIToken = "admin-token" })
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
	vars := []string{"COUNTERS_URL=http://127.0.0.1:1"}
	for _, s := range []step{
		{args: args("inc"), code: 2, err: "inc takes NAME [BY]"},
		{args: args("inc", "a", "b", "c"), code: 2, err: "inc takes NAME [BY]"},
		{args: args("inc", "a", "lots"), code: 2, err: `BY must be an integer, not "lots"`},
		{args: args("frobnicate"), code: 2, err: `unknown command "frobnicate"`},
		{args: args("keys"), code: 2, err: "keys needs a subcommand"},
		{args: args("keys", "burn"), code: 2, err: `unknown command "keys burn"`},
		{args: args("set", "a", "1", "--min", "low"), code: 2, err: `--min must be an integer or none`},
		{args: args("--min", "0", "set", "a", "1"), code: 2, err: "flag --min before the command"},
		{args: args("get", "a", "--bogus"), code: 2, err: "unknown flag --bogus"},
		{args: args("get", "a", "--timeout"), code: 2, err: "flag --timeout needs a value"},
		{args: args("get", "a", "--timeout", "soon"), code: 2, err: "invalid value"},
		{args: args("import", "f", "--mode", "replace"), code: 2, err: `--mode must be create or overwrite`},
		{args: args("get", "a", "--url", "localhost:8080"), code: 2, err: "must be http://host"},
		{args: args("webhooks", "create", "--endpoint", "https://x.example"), code: 2, err: "one of --name and --prefix"},
	} {
		s.check(t, ctl(t, vars, s.args...))
	}
	r := ctl(t, vars)
	if r.code != 0 || !strings.Contains(r.out, "\n  get NAME\n") || !strings.Contains(r.out, "Exit status") {
		t.Errorf("no arguments: exit %d, printed %q; want the usage and 0", r.code, r.out)
	}
}

// An increment whose answer a proxy dropped after the service committed it
// still prints the value, and the counter moved once.
func TestIncThroughAProxyThatDropsTheAnswerCountsOnce(t *testing.T) {
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

// watch prints a line per value until --timeout (or an interrupt), which
// is its normal end. The service side of live updates is being built on
// another branch: this server speaks API.md's contract, and an end-to-end
// test follows the merge.
func TestWatchPrintsALinePerValue(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if r.Header.Get("Last-Event-ID") != "" {
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, "retry: 10\n\n"+
			"event: counter\nid: 1\ndata: {\"name\":\"a\",\"value\":1,\"at\":\"2026-11-24T10:00:00Z\"}\n\n"+
			": keep-alive\n\n"+
			"event: counter\nid: 2\ndata: {\"name\":\"a\",\"value\":3,\"at\":\"2026-11-24T10:00:01Z\"}\n\n"+
			"event: deleted\nid: 3\ndata: {\"name\":\"a\"}\n\n")
	}))
	defer srv.Close()
	vars := []string{"COUNTERS_URL=" + srv.URL}
	runSession(t, vars, []step{
		{args: args("watch", "a", "--timeout", "1s"), out: "1\n3\ndeleted\n"},
		{args: args("watch", "a", "--timeout", "1s", "--json"), out: `{"name":"a","value":1,"at":"2026-11-24T10:00:00Z"}` + "\n" +
			`{"name":"a","value":3,"at":"2026-11-24T10:00:01Z"}` + "\n" + `{"name":"a"}` + "\n"},
	})
}

// The webhook commands speak API.md's contract (the service side is being
// built on another branch; an end-to-end test follows the merge).
func TestWebhookCommands(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.RequestURI())
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		hook := `{"id":7,"url":"https://shop.example/hook","name":"stock/widget","thresholds":[0],"direction":"down","created_at":"2026-01-01T00:00:00Z","disabled_at":null`
		switch r.Method + " " + r.URL.Path {
		case "POST /v1/webhooks":
			w.WriteHeader(201)
			fmt.Fprint(w, hook+`,"secret":"whsec_abc"}`)
		case "GET /v1/webhooks":
			fmt.Fprint(w, `{"webhooks":[`+hook+`}]}`)
		case "GET /v1/webhooks/7/deliveries":
			fmt.Fprint(w, `{"deliveries":[{"id":"d1","status":"delivered","attempts":1,"last_status_code":200,"next_attempt_at":null,"event":{}}]}`)
		case "POST /v1/webhooks/7/enable":
			fmt.Fprint(w, hook+`}`)
		case "DELETE /v1/webhooks/7":
			w.WriteHeader(204)
		default:
			w.WriteHeader(404)
			fmt.Fprint(w, `{"error":{"code":"not_found","message":"No such webhook."}}`)
		}
	}))
	defer srv.Close()
	runSession(t, []string{"COUNTERS_URL=" + srv.URL}, []step{
		{args: args("webhooks", "create", "--endpoint", "https://shop.example/hook", "--name", "stock/widget", "--thresholds", "0", "--direction", "down"), out: "whsec_abc\n"},
		{args: args("webhooks", "ls"), out: "7\tstock/widget\thttps://shop.example/hook\tenabled\n"},
		{args: args("webhooks", "deliveries", "7", "--limit", "5"), out: "d1\tdelivered\t1\n"},
		{args: args("webhooks", "enable", "7"), out: ""},
		{args: args("webhooks", "rm", "7"), out: ""},
		{args: args("webhooks", "rm", "8"), code: 1, err: "No such webhook. (not_found)"},
	})
	mu.Lock()
	defer mu.Unlock()
	want := "POST /v1/webhooks, GET /v1/webhooks, GET /v1/webhooks/7/deliveries?limit=5, POST /v1/webhooks/7/enable, DELETE /v1/webhooks/7, DELETE /v1/webhooks/8"
	if strings.Join(got, ", ") != want {
		t.Errorf("requests %s, want %s", strings.Join(got, ", "), want)
	}
}

// --timeout bounds a command, retries included: a service that never
// answers is an error (exit 1) after it, not a hang.
func TestTimeoutEndsACommandThatGetsNoAnswer(t *testing.T) {
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
