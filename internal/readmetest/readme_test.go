package readmetest_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
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

// The README's worked examples, run top to bottom with curl against a fresh
// service with the Redis cache, as scripts/run serves them, answer what the
// README says they answer.
func TestREADMEExamplesAnswerAsDocumented(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("curl is not installed (scripts/test installs it): %v", err)
	}
	examples := parseExamples(t, "../../README.md")
	if len(examples) < 10 {
		t.Fatalf("found %d example requests in README.md; are the blocks still marked %s?", len(examples), readmetest.Marker)
	}
	runExamples(t, "README.md", curl, examples)
}

// The live-updates guide's worked examples answer as it says.
func TestLiveUpdatesGuideExamplesAnswerAsDocumented(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("curl is not installed (scripts/test installs it): %v", err)
	}
	runExamples(t, "docs/live-updates.md", curl, parseExamples(t, "../../docs/live-updates.md"))
}

func parseExamples(t *testing.T, path string) []readmetest.Example {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	examples, err := readmetest.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return examples
}

// runExamples runs examples (of the document named doc) top to bottom with
// curl against a fresh service with the Redis cache, as scripts/run serves
// them.
func runExamples(t *testing.T, doc, curl string, examples []readmetest.Example) {
	t.Helper()
	env := apptest.NewWithCache(t, testenv.StartRedis(t).URL())
	dir := t.TempDir() // for what the examples write, such as badge.svg
	for _, ex := range examples {
		script := strings.Join(append(append([]string{curlWrapper}, ex.Setup...), ex.Command), "\n")
		script = strings.ReplaceAll(script, documentedBase, env.URL)
		cmd := exec.Command("bash", "-c", script)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "COUNTERS_API_TOKEN="}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		runErr := cmd.Run()
		m := reportedStatus.FindSubmatch(stderr.Bytes())
		if m == nil {
			t.Errorf("%s:%d: %s\ncurl (%s) reported no status: %v\n%s", doc, ex.Line, ex.Command, curl, runErr, stderr.Bytes())
			continue
		}
		status, _ := strconv.Atoi(string(m[1]))
		want, err := readmetest.ParseDocumented(ex.Answer)
		if err != nil {
			t.Errorf("%s:%d: %v", doc, ex.Line, err)
			continue
		}
		if d := readmetest.Compare(want, readmetest.ParseReceived(stdout.Bytes(), status)); d != "" {
			t.Errorf("%s:%d: %s\n%s\nanswered: %s", doc, ex.Line, ex.Command, d, firstLines(stdout.String(), 8))
		}
	}
}

func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	if len(lines) > n {
		lines = append(lines[:n], fmt.Sprintf("... (%d bytes in all)", len(s)))
	}
	return strings.Join(lines, "\n")
}
