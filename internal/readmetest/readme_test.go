package readmetest_test

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/wire"
	"github.com/go-sql-driver/mysql"

	"github.com/countersvc/countersvc/internal/readmetest"
	"github.com/countersvc/countersvc/internal/testenv"
)

// root is the repository, where README.md and docs/ are.
const root = "../.."

// documentedBase is the address the examples send to; the test sends them
// to its own service instead.
const documentedBase = "http://localhost:8080"

// documentedReceiver is where the examples' webhook receiver
// (docs/webhook-receiver) listens; the test gives each file a free port
// of its own instead.
const documentedReceiver = "127.0.0.1:9000"

// receiverRun is how the examples start the receiver. goWrapper runs the
// receiver the test built instead (exec: so that ending the background
// job ends the receiver), and refuses any other go command.
const receiverRun = "go run ./docs/webhook-receiver"

const goWrapper = `go() { [ "$*" = "run ./docs/webhook-receiver" ] || { echo "go $*: the examples may only run the receiver" >&2; return 1; }; exec webhook-receiver; }`

// settings are the service settings a file may name in its
// <!-- examples: --> line, as the test applies them.
var settings = map[string]apptest.Option{
	"COUNTERS_WEBHOOK_ALLOW_PRIVATE=true": func(c *wire.Config) { c.Webhooks.AllowPrivate = true },
}

// curlWrapper makes each request quiet, bounded in time, and report its
// status on stderr, where it does not mix with the answer.
const curlWrapper = `curl() { command curl -sS --max-time 20 -w '%{stderr}\nHTTPSTATUS %{http_code}\n' "$@"; }`

var reportedStatus = regexp.MustCompile(`HTTPSTATUS ([0-9]{3})`)

// ctlWrapper reports a countersctl line's exit status on stderr, after
// what it wrote there itself.
const ctlWrapper = `countersctl() { command countersctl "$@"; echo "EXITSTATUS $?" >&2; }`

var reportedExit = regexp.MustCompile(`(?m)^EXITSTATUS ([0-9]+)\n?`)

// The worked examples of README.md and of every guide in docs/, each file
// run top to bottom with curl against a fresh service of its own with the
// Redis cache, as scripts/run serves them, answer what the file says they
// answer. A file starts empty, so that its examples read as the first
// session of a newcomer and no guide depends on what another counted.
func TestDocumentedExamplesAnswerAsDocumented(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is not installed (scripts/test installs it): %v", err)
	}
	files, err := readmetest.Documents(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		examples := examplesOf(t, file)
		if len(examples) == 0 {
			continue
		}
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			runExamples(t, apptest.NewWithCache(t, testenv.StartRedis(t).URL(), settingsOf(t, file)...), examples)
		})
	}
}

// After `scripts/run reset` a database that the README's examples filled
// is as new: the client guide's examples, run next on the same database
// and Redis (as a newcomer reads one after the other), answer as
// documented. Without the reset 15 of its answers differ.
func TestExamplesAnswerAsDocumentedAfterScriptsRunReset(t *testing.T) {
	t.Parallel()
	dsn, rd := testenv.MySQLDSN(t), testenv.StartRedis(t)
	withRedis := func(c *wire.Config) { c.Cache.RedisURL = rd.URL() }
	first := apptest.NewWithDSN(t, dsn, withRedis)
	runExamples(t, first, examplesOf(t, "README.md"))
	first.Close()

	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(cfg.Addr)
	// The functions scripts/run reset calls, on this test's servers.
	reset := exec.Command("bash", "-c", `source scripts/lib.sh && reset_database "$@" && reset_redis 127.0.0.1 "$REDIS_PORT"`,
		"reset", host, port, cfg.User, cfg.Passwd, cfg.DBName)
	reset.Dir = root
	reset.Env = append(os.Environ(), "REDIS_PORT="+strconv.Itoa(rd.Port))
	if out, err := reset.CombinedOutput(); err != nil {
		t.Fatalf("reset: %v: %s", err, out)
	}
	runExamples(t, apptest.NewWithDSN(t, dsn, append(settingsOf(t, "docs/client.md"), withRedis)...), examplesOf(t, "docs/client.md"))
}

// settingsOf is the service's configuration for file's examples, as its
// <!-- examples: --> line names it.
func settingsOf(t *testing.T, file string) []apptest.Option {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	named, err := readmetest.Settings(file, text)
	if err != nil {
		t.Fatal(err)
	}
	var opts []apptest.Option
	for _, s := range named {
		opt, ok := settings[s]
		if !ok {
			t.Fatalf("%s: the test cannot apply the setting %s", file, s)
		}
		opts = append(opts, opt)
	}
	return opts
}

// examplesOf parses the examples of file, a path below the repository.
func examplesOf(t *testing.T, file string) []readmetest.Example {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	examples, err := readmetest.Parse(file, text)
	if err != nil {
		t.Error(err)
	}
	if file == "README.md" && len(examples) < 10 {
		t.Errorf("found %d example requests in README.md; are the blocks still marked %s?", len(examples), readmetest.Marker)
	}
	return examples
}

// runExamples runs one file's examples as one shell session, top to
// bottom, against env; each request's answer goes to a file of its own,
// and a failure names the file and line of the request.
func runExamples(t *testing.T, env *apptest.Env, examples []readmetest.Example) {
	dir := t.TempDir() // for the answers and what the examples write, such as badge.svg
	// What build builds comes first in the examples' PATH.
	path := commands.dir + string(os.PathListSeparator) + os.Getenv("PATH")
	if slices.ContainsFunc(examples, func(ex readmetest.Example) bool { return readmetest.IsCountersctl(ex.Command) }) {
		build(t, "./cmd/countersctl")
	}
	if slices.ContainsFunc(examples, func(ex readmetest.Example) bool {
		return slices.ContainsFunc(ex.Setup, func(l string) bool { return strings.Contains(l, receiverRun) })
	}) {
		build(t, "./docs/webhook-receiver")
	}
	script := []string{curlWrapper, ctlWrapper, goWrapper}
	for i, ex := range examples {
		script = append(script, ex.Setup...)
		script = append(script, fmt.Sprintf("{\n%s\n} >%d.out 2>%d.err", ex.Command, i, i))
	}
	// What the examples started in the background (the receiver) ends
	// with them.
	script = append(script, `kill $(jobs -p) 2>/dev/null; wait`)
	receiver := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	text := strings.NewReplacer(documentedBase, env.URL, documentedReceiver, receiver).Replace(strings.Join(script, "\n"))
	cmd := exec.Command("bash", "-c", text)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + path, "HOME=" + dir, "COUNTERS_API_TOKEN=", "COUNTERS_URL=" + env.URL, "GORACE=" + commandsGORACE()}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("the session ended with %v: %s", err, out) // each request's status below says what failed
	}
	for i, ex := range examples {
		stdout, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.out", i)))
		stdout = bytes.ReplaceAll(stdout, []byte(receiver), []byte(documentedReceiver)) // a hook's url, as documented
		stderr, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.err", i)))
		if readmetest.IsCountersctl(ex.Command) {
			checkCommand(t, ex, stdout, stderr)
			continue
		}
		m := reportedStatus.FindSubmatch(stderr)
		if m == nil {
			t.Errorf("%s:%d: %s\ncurl reported no status:\n%s", ex.File, ex.Line, ex.Command, stderr)
			continue
		}
		status, _ := strconv.Atoi(string(m[1]))
		doc, err := ex.Documented()
		if err != nil {
			t.Errorf("%s:%d: %v", ex.File, ex.Line, err)
			continue
		}
		if d := readmetest.Compare(doc, readmetest.ParseReceived(stdout, status)); d != "" {
			t.Errorf("%s:%d: %s\n%s\nanswered: %s", ex.File, ex.Line, ex.Command, d, firstLines(string(stdout), 8))
		}
	}
}

// checkCommand holds what a countersctl line printed, wrote on stderr and
// exited with to its documented answer.
func checkCommand(t *testing.T, ex readmetest.Example, stdout, stderr []byte) {
	t.Helper()
	m := reportedExit.FindSubmatch(stderr)
	if m == nil {
		t.Errorf("%s:%d: %s\nno exit status reported:\n%s", ex.File, ex.Line, ex.Command, stderr)
		return
	}
	exit, _ := strconv.Atoi(string(m[1]))
	doc, err := ex.Documented()
	if err != nil {
		t.Errorf("%s:%d: %v", ex.File, ex.Line, err)
		return
	}
	got := readmetest.Answer{Body: string(stdout), Exit: exit, Stderr: string(reportedExit.ReplaceAll(stderr, nil))}
	if d := readmetest.CompareCommand(doc, got); d != "" {
		t.Errorf("%s:%d: %s\n%s\nprinted: %s", ex.File, ex.Line, ex.Command, d, firstLines(string(stdout), 8))
	}
}

// commands are the repository's commands that the examples run, built
// into dir (made by TestMain) once a test binary: a go build of one takes
// a second or more even when its packages are cached, and most files run
// countersctl.
var commands struct {
	dir   string
	mu    sync.Mutex
	built map[string]*builtCommand
}

type builtCommand struct {
	once sync.Once
	err  error
}

// build builds a command of the repository (./cmd/countersctl) into
// commands.dir for the examples to run, unless it is built already.
func build(t *testing.T, pkg string) {
	t.Helper()
	if err := buildOnce(pkg); err != nil {
		t.Fatal(err)
	}
}

// buildOnce builds pkg into commands.dir the first time it is called
// for pkg; later calls wait for that build and return its error.
func buildOnce(pkg string) error {
	commands.mu.Lock()
	if commands.built == nil {
		commands.built = map[string]*builtCommand{}
	}
	b := commands.built[pkg]
	if b == nil {
		b = &builtCommand{}
		commands.built[pkg] = b
	}
	commands.mu.Unlock()
	b.once.Do(func() {
		cmd := exec.Command("go", append(append([]string{"build"}, commandFlags()...), "-o", commands.dir, pkg)...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v: %s", pkg, err, out)
		}
	})
	return b.err
}

// commandFlags are the build flags of the commands the examples run,
// decided once a test binary. Built plain, they run faster: the guides'
// 83 countersctl lines took 16 CPU s more race-built. But where the
// standard library is not compiled for plain builds (an empty build
// cache: a fresh machine, CI's new user), a plain build compiled it and
// the client anew, 89 CPU s, which made this package 84 s instead of
// 20: then they are built with this binary's own flags (-race, say),
// whose packages go test has compiled into the build cache already.
var commandFlags = sync.OnceValue(func() []string {
	cmd := exec.Command("go", "list", "-f", "{{.Stale}}", "net/http")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil && strings.TrimSpace(string(out)) == "false" {
		return nil
	}
	return testenv.BuildFlags()
})

// commandsGORACE is the race detector's setting for the commands the
// examples run, when commandFlags builds them with -race: the test's own
// GORACE, else a 50 ms wait at exit where a race-built program waits a
// second (atexit_sleep_ms, for the reports of goroutines still running;
// races are reported as they happen), which each of the guides' 83
// countersctl lines would pay; scripts/test sets the same.
func commandsGORACE() string {
	if v := os.Getenv("GORACE"); v != "" {
		return v
	}
	return "atexit_sleep_ms=50"
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d bytes in all)", len(s)))
	}
	return strings.Join(lines, "\n")
}
