package clienttest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
	flaky := newFailFirstProxy(t, svc.URL)

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
	attempts := flaky.attempts()
	if len(attempts) == 0 {
		t.Error("no write went through the proxy that answers 429/502/503/504 first")
	}
	for key, n := range attempts {
		if key == "" || n%(len(flakyFailures)+1) != 0 {
			t.Errorf("Idempotency-Key %q reached the failing proxy %d times, want a multiple of %d: one key for every attempt of a write",
				key, n, len(flakyFailures)+1)
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

// flakyFailures are what failFirstProxy answers each write's attempts
// with, in order, before it lets one through. The 502 and 504 come after
// the service has done the write, as a proxy's may.
var flakyFailures = []struct {
	status    int
	forwarded bool
}{
	{http.StatusTooManyRequests, false},
	{http.StatusBadGateway, true},
	{http.StatusServiceUnavailable, false},
	{http.StatusGatewayTimeout, true},
}

// failFirstProxy forwards reads, and answers the attempts of each write
// (told apart by Idempotency-Key) with flakyFailures before it forwards
// the next.
type failFirstProxy struct {
	URL string
	mu  sync.Mutex
	n   map[string]int // attempts per Idempotency-Key
}

func newFailFirstProxy(t *testing.T, target string) *failFirstProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) }}
	p := &failFirstProxy{n: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			rp.ServeHTTP(w, r)
			return
		}
		key := r.Header.Get("Idempotency-Key")
		p.mu.Lock()
		// A key given to a second call (an order sent again) goes through
		// the failures again.
		i := p.n[key] % (len(flakyFailures) + 1)
		p.n[key]++
		p.mu.Unlock()
		if i == len(flakyFailures) {
			rp.ServeHTTP(w, r)
			return
		}
		f := flakyFailures[i]
		if f.forwarded {
			rp.ServeHTTP(httptest.NewRecorder(), r) // the service does it; the proxy loses its answer
		}
		switch f.status {
		case http.StatusTooManyRequests:
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.status)
			fmt.Fprint(w, `{"error":{"code":"rate_limited","message":"Slow down."}}`)
		case http.StatusServiceUnavailable:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(f.status)
			fmt.Fprint(w, `{"error":{"code":"unavailable","message":"MySQL cannot be reached; nothing was changed."}}`)
		default: // a proxy's own page, not the API's error body
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(f.status)
			fmt.Fprintf(w, "<html><body>%d %s</body></html>", f.status, http.StatusText(f.status))
		}
	}))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

func (p *failFirstProxy) attempts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.n))
	for k, v := range p.n {
		out[k] = v
	}
	return out
}
