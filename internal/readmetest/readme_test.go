package readmetest_test

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// curlWrapper makes each request quiet, bounded in time, and report its
// status on stderr, where it does not mix with the answer.
const curlWrapper = `curl() { command curl -sS --max-time 20 -w '%{stderr}\nHTTPSTATUS %{http_code}\n' "$@"; }`

var reportedStatus = regexp.MustCompile(`HTTPSTATUS ([0-9]{3})`)

// ctlWrapper holds a countersctl line to what a curl line answering 200
// is held to when it exits 0; any other exit reports no status, and its
// stderr says why.
const ctlWrapper = `countersctl() { command countersctl "$@"; local s=$?; [ $s = 0 ] && echo 'HTTPSTATUS 200' >&2 || echo "countersctl exited $s, so no status" >&2; }`

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
		t.Run(file, func(t *testing.T) { runExamples(t, apptest.NewWithCache(t, testenv.StartRedis(t).URL()), examples) })
	}
}

// After `scripts/run reset` a database that the README's examples filled
// is as new: the client guide's examples, run next on the same database
// and Redis (as a newcomer reads one after the other), answer as
// documented. Without the reset 15 of its answers differ.
func TestExamplesAnswerAsDocumentedAfterScriptsRunReset(t *testing.T) {
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
	runExamples(t, apptest.NewWithDSN(t, dsn, withRedis), examplesOf(t, "docs/client.md"))
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
	path := os.Getenv("PATH")
	if slices.ContainsFunc(examples, func(ex readmetest.Example) bool { return readmetest.IsCountersctl(ex.Command) }) {
		buildCountersctl(t, dir)
		path = dir + string(os.PathListSeparator) + path
	}
	script := []string{curlWrapper, ctlWrapper}
	for i, ex := range examples {
		script = append(script, ex.Setup...)
		script = append(script, fmt.Sprintf("{\n%s\n} >%d.out 2>%d.err", ex.Command, i, i))
	}
	cmd := exec.Command("bash", "-c", strings.ReplaceAll(strings.Join(script, "\n"), documentedBase, env.URL))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + path, "HOME=" + dir, "COUNTERS_API_TOKEN=", "COUNTERS_URL=" + env.URL}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Logf("the session ended with %v: %s", err, out) // each request's status below says what failed
	}
	for i, ex := range examples {
		stdout, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.out", i)))
		stderr, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%d.err", i)))
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

// buildCountersctl builds the command into dir for the examples to run.
func buildCountersctl(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("go", "build", "-o", dir, root+"/cmd/countersctl").CombinedOutput(); err != nil {
		t.Fatalf("go build countersctl: %v: %s", err, out)
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d bytes in all)", len(s)))
	}
	return strings.Join(lines, "\n")
}
