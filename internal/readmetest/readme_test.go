package readmetest_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"countersvc/internal/apptest"
	"countersvc/internal/readmetest"
	"countersvc/internal/testenv"
)

// documentedBase is the address the README's examples send to; the test
// sends them to its own service instead.
const documentedBase = "http://localhost:8080"

// curlWrapper makes each request quiet, bounded in time, and report its
// status on stderr, where it does not mix with the answer.
const curlWrapper = `curl() { command curl -sS --max-time 20 -w '%{stderr}\nHTTPSTATUS %{http_code}\n' "$@"; }`

var reportedStatus = regexp.MustCompile(`HTTPSTATUS ([0-9]{3})`)

// ctlWrapper holds a countersctl line to what a curl line answering 200
// is held to when it exits 0; any other exit reports no status, and its
// stderr says why.
const ctlWrapper = `countersctl() { command countersctl "$@"; local s=$?; [ $s = 0 ] && echo 'HTTPSTATUS 200' >&2 || echo "countersctl exited $s, so no status" >&2; }`

// The README's worked examples, run top to bottom with curl against a fresh
// service with the Redis cache, as scripts/run serves them, answer what the
// README says they answer.
func TestREADMEExamplesAnswerAsDocumented(t *testing.T) {
	runExamples(t, "README.md", 10)
}

// The guides' worked examples likewise, each guide on a service of its own.
func TestGuideExamplesAnswerAsDocumented(t *testing.T) {
	for _, guide := range []string{"docs/client.md"} {
		t.Run(guide, func(t *testing.T) { runExamples(t, guide, 3) })
	}
}

// runExamples runs the example blocks of the markdown file doc (from the
// repository's root), which must hold at least least requests.
func runExamples(t *testing.T, doc string, least int) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("curl is not installed (scripts/test installs it): %v", err)
	}
	text, err := os.ReadFile("../../" + doc)
	if err != nil {
		t.Fatal(err)
	}
	examples, err := readmetest.Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) < least {
		t.Fatalf("found %d example requests in %s; are the blocks still marked %s?", len(examples), doc, readmetest.Marker)
	}
	env := apptest.NewWithCache(t, testenv.StartRedis(t).URL())
	dir := t.TempDir() // for what the examples write, such as badge.svg
	path := os.Getenv("PATH")
	if slices.ContainsFunc(examples, func(ex readmetest.Example) bool { return readmetest.IsCountersctl(ex.Command) }) {
		buildCountersctl(t, dir)
		path = dir + string(os.PathListSeparator) + path
	}
	for _, ex := range examples {
		script := strings.Join(append(append([]string{curlWrapper, ctlWrapper}, ex.Setup...), ex.Command), "\n")
		script = strings.ReplaceAll(script, documentedBase, env.URL)
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + path, "HOME=" + dir, "COUNTERS_API_TOKEN=", "COUNTERS_URL=" + env.URL}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		m := reportedStatus.FindSubmatch(stderr.Bytes())
		if m == nil {
			t.Errorf("%s:%d: %s\ncurl (%s) reported no status: %v\n%s", doc, ex.Line, ex.Command, curl, runErr, stderr.Bytes())
			continue
		}
		status, _ := strconv.Atoi(string(m[1]))
		answer, err := readmetest.ParseDocumented(ex.Answer)
		if err != nil {
			t.Errorf("%s:%d: %v", doc, ex.Line, err)
			continue
		}
		if d := readmetest.Compare(answer, readmetest.ParseReceived(stdout.Bytes(), status)); d != "" {
			t.Errorf("%s:%d: %s\n%s\nanswered: %s", doc, ex.Line, ex.Command, d, firstLines(stdout.String(), 8))
		}
	}
}

// buildCountersctl builds the command into dir for the examples to run.
func buildCountersctl(t *testing.T, dir string) {
	t.Helper()
	if out, err := exec.Command("go", "build", "-o", dir, "../../cmd/countersctl").CombinedOutput(); err != nil {
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
