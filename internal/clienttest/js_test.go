package clienttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// jsDir is the TypeScript client's package, from this package's directory.
const jsDir = "../../clients/js"

// The TypeScript client (clients/js) against the real service: this test
// starts the service as the Go client's tests do, with Redis, a proxy that
// drops the answer of each write's first attempt after the service
// committed it, and one that answers its first attempt 429, 502, 503 or
// 504 in turn (the 502 and 504 after the service committed it). It builds
// the package (npm ci when its node_modules are missing or older than
// package-lock.json, then tsc) and runs what `npm test` runs (the type
// test against openapi.yaml, then Node's own test runner, with a test
// that installs the packed package offline into an empty project) with
// the URLs in COUNTERS_JS_*. The build and the type test, which need no
// service, run side by side while the service starts. Through both
// proxies, every write carried one key on both of its attempts: the JS
// tests check that each increment counted once.
func TestTypeScriptClientAgainstTheService(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed, so the TypeScript client's tests did not run: scripts/test installs it " +
			"(Debian's nodejs); or run as root: apt-get install -y --no-install-recommends nodejs")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not on PATH, so the TypeScript client's tests did not run: scripts/test puts npm there " +
			"(fetched from the npm registry into .local/npm), as in scripts/test ./internal/clienttest -run TypeScript")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir, err := filepath.Abs(jsDir)
	if err != nil {
		t.Fatal(err)
	}
	noteInputs(t, dir)
	built := make(chan error, 1)
	var building sync.WaitGroup
	building.Add(1)
	go func() { defer building.Done(); built <- buildAndCheckTypes(ctx, t, dir) }()
	t.Cleanup(building.Wait) // a test that failed first has cancelled ctx, which ends npm

	env := apptest.NewWithCache(t, testenv.StartRedis(t).URL(), func(c *wire.Config) {
		c.Webhooks.AllowPrivate = true // the tests' hooks call this machine
	})
	drop := env.NewFirstFailProxy(t, apptest.FailDrop)
	flaky := env.NewFirstFailProxy(t, apptest.Fail429, apptest.Fail502, apptest.Fail503, apptest.Fail504)
	if err := <-built; err != nil {
		t.Fatal(err)
	}
	npm(ctx, t, dir, []string{
		"COUNTERS_JS_URL=" + env.URL,
		"COUNTERS_JS_DROP_URL=" + drop.URL,
		"COUNTERS_JS_FLAKY_URL=" + flaky.URL,
	}, "run", "--silent", "test:service")

	for name, p := range map[string]*apptest.FirstFailProxy{"drop": drop, "429/502/503/504": flaky} {
		attempts := p.Attempts()
		if len(attempts) < 20 {
			t.Errorf("%s proxy: %d writes reached it, want the JS tests' 20 or more", name, len(attempts))
		}
		for key, n := range attempts {
			if n != 2 {
				t.Errorf("%s proxy: Idempotency-Key %q was sent %d times, want twice: the failed attempt and its retry with the same key", name, key, n)
			}
		}
	}
}

// noteInputs stats what npm test reads (the package's sources and tests,
// openapi.yaml, docs/client.md), so that go test's cache, which sees only
// the files this process opens, runs the test again when one changed.
func noteInputs(t *testing.T, dir string) {
	t.Helper()
	for _, f := range []string{"../../openapi.yaml", "../../docs/client.md"} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "dist" || d.Name() == "generated") {
			return filepath.SkipDir
		}
		_, err = os.Stat(path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// stale says whether the package's node_modules must be installed again:
// missing, or older than package-lock.json (npm ci writes
// node_modules/.package-lock.json). Installing takes seconds with a warm
// cache, and this test runs in every CI run.
func stale(dir string) bool {
	installed, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json"))
	if err != nil {
		return true
	}
	lock, err := os.Stat(filepath.Join(dir, "package-lock.json"))
	return err != nil || lock.ModTime().After(installed.ModTime())
}

// buildAndCheckTypes installs the package's node_modules when they are
// stale, then builds it and runs its type test (npm test's first step)
// side by side: neither reads what the other writes.
func buildAndCheckTypes(ctx context.Context, t *testing.T, dir string) error {
	if stale(dir) {
		if err := npmRun(ctx, t, dir, nil, "ci"); err != nil {
			return err
		}
	}
	errs := make(chan error, 2)
	go func() { errs <- npmRun(ctx, t, dir, nil, "run", "build") }()
	go func() { errs <- npmRun(ctx, t, dir, nil, "run", "--silent", "test:types") }()
	return errors.Join(<-errs, <-errs)
}

// npm runs npm in dir with the extra environment, failing the test with
// its output when it fails.
func npm(ctx context.Context, t *testing.T, dir string, extra []string, args ...string) {
	t.Helper()
	if err := npmRun(ctx, t, dir, extra, args...); err != nil {
		t.Fatal(err)
	}
}

// npmRun runs npm in dir with the extra environment and returns an error
// with its output when it fails; it may run outside the test's goroutine.
func npmRun(ctx context.Context, t *testing.T, dir string, extra []string, args ...string) error {
	cmd := exec.CommandContext(ctx, "npm", args...)
	cmd.Dir = dir
	// No audit, fund or update notices: they call the registry, which a
	// test has no need of (the audit is a step of its own).
	cmd.Env = append(os.Environ(), "npm_config_audit=false", "npm_config_fund=false", "npm_config_update_notifier=false")
	cmd.Env = append(cmd.Env, extra...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("npm %s (%.1fs)", strings.Join(args, " "), time.Since(start).Seconds())
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("npm %s did not finish in time:\n%s", strings.Join(args, " "), out)
		}
		return fmt.Errorf("npm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if testing.Verbose() {
		t.Logf("%s", out)
	}
	return nil
}
