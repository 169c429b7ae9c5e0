package scripts_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/testenv"
)

// The early compile of scripts/test runs go test with -toolexec
// scripts/toolexec-nolink and -exec /bin/true: it compiles and vets into
// the build cache and links nothing, and the run after it then only links
// (go caches no test binary, so a link there would be made twice). Here
// on a module of its own: the early go test passes; the run after it
// compiles and vets nothing of the package, links it, and runs its test.
func TestEarlyCompileLeavesTheRunOnlyTheLink(t *testing.T) {
	wrapper, err := filepath.Abs("toolexec-nolink")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A package of its own each run (a name no cache has seen), with a
	// test that says it ran.
	files := map[string]string{
		"go.mod":    "module example.com/early\n\ngo 1.21\n",
		"early.go":  "package early\n\n// Dir is where this test's module was made.\nconst Dir = `" + dir + "`\n",
		"e_test.go": "package early\n\nimport \"testing\"\n\nfunc TestRan(t *testing.T) { t.Log(\"ran in\", Dir) }\n",
		// cgo, where it is on (-race needs it), runs through the wrapper too.
		"c.go":      "//go:build cgo\n\npackage early\n\n// static int seven(void) { return 7; }\nimport \"C\"\n\nfunc seven() int { return int(C.seven()) }\n",
		"x_test.go": "package early_test\n\nimport (\n\t\"testing\"\n\n\t\"example.com/early\"\n)\n\nfunc TestOutside(t *testing.T) { _ = early.Dir }\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goTest := func(args ...string) string {
		t.Helper()
		// With this binary's own flags (-race, say), whose standard
		// library go test has in its cache already.
		cmd := testenv.GoCommand(context.Background(), "test", append([]string{"-count=1", "-vet=all"}, args...)...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go test %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	early := goTest("-work", "-exec", "/bin/true", "-toolexec", "'"+wrapper+"'", ".")
	work := regexp.MustCompile(`(?m)^WORK=(.+)$`).FindStringSubmatch(early)
	if work == nil {
		t.Fatalf("the early go test named no work directory:\n%s", early)
	}
	defer os.RemoveAll(work[1])
	if fi, err := os.Stat(filepath.Join(work[1], "b001", "early.test")); err != nil || fi.Size() != 0 {
		t.Errorf("the early go test left a test binary that is not empty (%v): it linked", err)
	}
	out := goTest("-x", "-v", ".")
	if !strings.Contains(out, "ran in "+dir) {
		t.Errorf("the run did not run the test:\n%s", out)
	}
	// -x shows each tool go runs: the run finds all but the link in the
	// build cache (the standard library was compiled and vetted there by
	// the early go test, if not before).
	if ran := regexp.MustCompile(`(?m)/(compile|vet|asm|cgo) .*`).FindAllString(out, -1); len(ran) > 0 {
		t.Errorf("the run ran tools again after the early compile:\n%s", strings.Join(ran, "\n"))
	}
	if !regexp.MustCompile(`/link .*early\.test`).MatchString(out) {
		t.Errorf("the run did not link the test binary:\n%s", out)
	}
}
