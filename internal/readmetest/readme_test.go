package readmetest_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"countersvc/internal/apptest"
	"countersvc/internal/readmetest"
	"countersvc/internal/testenv"
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
		text, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		examples, err := readmetest.Parse(file, text)
		if err != nil {
			t.Error(err)
			continue
		}
		if file == "README.md" && len(examples) < 10 {
			t.Errorf("found %d example requests in README.md; are the blocks still marked %s?", len(examples), readmetest.Marker)
		}
		if len(examples) == 0 {
			continue
		}
		t.Run(file, func(t *testing.T) { runExamples(t, examples) })
	}
}

// runExamples runs one file's examples, in order, against a service of
// their own; a failure names the file and line of the request.
func runExamples(t *testing.T, examples []readmetest.Example) {
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
			t.Errorf("%s:%d: %s\ncurl reported no status: %v\n%s", ex.File, ex.Line, ex.Command, runErr, stderr.Bytes())
			continue
		}
		status, _ := strconv.Atoi(string(m[1]))
		doc, err := readmetest.ParseDocumented(ex.Answer)
		if err != nil {
			t.Errorf("%s:%d: %v", ex.File, ex.Line, err)
			continue
		}
		if d := readmetest.Compare(doc, readmetest.ParseReceived(stdout.Bytes(), status)); d != "" {
			t.Errorf("%s:%d: %s\n%s\nanswered: %s", ex.File, ex.Line, ex.Command, d, firstLines(stdout.String(), 8))
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
