package clienttest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/wire"
)

// The Python client (clients/python) is installed as its README says,
// offline into a fresh venv, and its unittest tests run from there against
// the service: directly, through a proxy that drops each write's first
// answer after the service committed it (one proxy per kind of write),
// and through one that answers 429, 502, 503 and 504 before it lets a
// write through. Every write must count once: the Python tests check the
// values, this test that each write sent one key on all its attempts.
func TestPythonClient(t *testing.T) {
	t.Parallel()
	python := pythonBinary(t)
	src, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	// pip takes seconds: it runs while the services start.
	type installed struct {
		venv string
		err  error
	}
	install := make(chan installed, 1)
	dir := t.TempDir()
	go func() {
		venv, err := installPythonClient(python, src, dir)
		install <- installed{venv, err}
	}()

	svc := apptest.New(t, func(c *wire.Config) { c.Webhooks.AllowPrivate = true })
	const adminToken = "py-admin-token"
	guarded := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = adminToken })
	// One drop proxy per write the Python test sends through one: each
	// drops the answer of that write's first attempt.
	const dropped = 4 // increment, increment with labels, batch, set
	var drops []*apptest.DropProxy
	var dropURLs []string
	for range dropped {
		p := svc.NewDropProxy(t, 1)
		drops, dropURLs = append(drops, p), append(dropURLs, p.URL)
	}
	flaky := svc.NewEachAttemptFailProxy(t, pythonFailures...)

	in := <-install
	if in.err != nil {
		t.Fatalf("installing the Python client as its README says: %v", in.err)
	}
	venv := in.venv
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(venv, "bin", "python"), "-m", "unittest", "discover",
		"-s", filepath.Join(src, "tests"), "-t", filepath.Join(src, "tests"), "-v")
	cmd.Dir = t.TempDir() // not the source tree: the tests must import the installed package
	cmd.Env = append(os.Environ(),
		"COUNTERS_URL="+svc.URL,
		"COUNTERS_ADMIN_URL="+guarded.URL,
		"COUNTERS_ADMIN_TOKEN="+adminToken,
		"COUNTERS_DROP_URLS="+strings.Join(dropURLs, ","),
		"COUNTERS_FLAKY_URL="+flaky.URL,
		"PYTHONDONTWRITEBYTECODE=1",
	)
	out, err := cmd.CombinedOutput()
	t.Logf("python -m unittest:\n%s", out)
	if err != nil {
		t.Fatalf("the Python client's tests failed: %v", err)
	}
	// The tests skip themselves without the service's URLs; here they
	// have them, and a skip would be a test that did not run.
	if bytes.Contains(out, []byte("skipped")) {
		t.Error("some of the Python client's tests were skipped")
	}

	for i, p := range drops {
		if keys := p.Keys(); len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
			t.Errorf("drop proxy %d saw Idempotency-Keys %q: want one key, sent again after the lost answer", i, keys)
		}
	}
	attempts := flaky.Attempts()
	if len(attempts) == 0 {
		t.Error("no write went through the proxy that answers 429/502/503/504 first")
	}
	for key, n := range attempts {
		if key == "" || n%(len(pythonFailures)+1) != 0 {
			t.Errorf("Idempotency-Key %q reached the failing proxy %d times, want a multiple of %d: one key for every attempt of a write",
				key, n, len(pythonFailures)+1)
		}
	}
}

// pythonBinary is COUNTERS_TEST_PYTHON, else Debian's python3 (with
// Debian's pip, which scripts/test installs), else python3 on the PATH.
func pythonBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("COUNTERS_TEST_PYTHON"); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Fatalf("python3 is not installed (scripts/test installs it): %v", err)
	}
	return p
}

// installPythonClient makes a venv in dir and installs the client from
// src into it with a plain pip install, as its README says, with no
// package index, and returns the venv. The client's own build backend
// (_backend/stdlib_backend.py) needs nothing from an index and writes
// nothing into src.
func installPythonClient(python, src, dir string) (string, error) {
	venv := filepath.Join(dir, "venv")
	run := func(name string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		// No index (nor the machine's own find-links), no cache in
		// $HOME, no question: what CI on a fresh machine without a
		// network does, even where this one has a network. A build that
		// needed anything from an index (setuptools, say) fails here.
		cmd.Env = append(os.Environ(), "PIP_NO_INDEX=1", "PIP_FIND_LINKS=", "PIP_NO_INPUT=1", "PIP_NO_CACHE_DIR=1",
			"PIP_DISABLE_PIP_VERSION_CHECK=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	// The README's fast two lines: the system's pip comes in through
	// --system-site-packages, which saves the seconds ensurepip takes to
	// install a pip of the venv's own. pip builds the client in an
	// isolated environment, as it would in any venv.
	if _, err := run(python, "-m", "venv", "--system-site-packages", "--without-pip", venv); err != nil {
		return "", err
	}
	bin := filepath.Join(venv, "bin", "python")
	if _, err := run(bin, "-m", "pip", "install", src); err != nil {
		return "", err
	}
	out, err := run(bin, "-c", "import countersvc, os; print(os.path.dirname(countersvc.__file__))")
	if err != nil {
		return "", err
	}
	got := strings.TrimSpace(out)
	if !strings.HasPrefix(got, venv+string(filepath.Separator)) {
		return "", fmt.Errorf("countersvc imports from %s, want the venv %s", got, venv)
	}
	if _, err := os.Stat(filepath.Join(got, "py.typed")); err != nil {
		return "", fmt.Errorf("the installed package has no py.typed, so type checkers ignore its types: %v", err)
	}
	return venv, nil
}

// pythonFailures are what the failing proxy answers each write's
// attempts with, in order, before it lets one through. The 502 and 504
// come after the service has done the write, as a proxy's may.
var pythonFailures = []apptest.Failure{apptest.Fail429, apptest.Fail502, apptest.Fail503, apptest.Fail504}
