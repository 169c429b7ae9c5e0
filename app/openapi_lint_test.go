package app_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// redoclyCLI is the Redocly CLI that lints openapi.yaml, pinned: a new
// release may bring new rules, which should arrive by a change here.
const redoclyCLI = "@redocly/cli@2.77.0"

// openapi.yaml lints clean under redocly.yaml (the recommended rules, all
// as errors). Redocly CLI is a Node.js program fetched by npx from the npm
// registry (into npm's cache, the first time): without npx, a Node.js it
// supports (20.19 or 22.12 on) or the registry, the test skips and says
// why; a lint problem fails it.
func TestOpenAPILintsClean(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("no npx (Node.js and npm): openapi.yaml is not linted here")
	}
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(args ...string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, npx, append([]string{"--yes", redoclyCLI}, args...)...)
		cmd.Dir = ".." // where openapi.yaml and redocly.yaml are
		cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
		return cmd.CombinedOutput()
	}
	// The lint runs first: only when it fails does --version tell a CLI
	// that cannot run from a lint problem (each start of the CLI costs
	// about 2 s of CPU, which a passing lint does not pay twice).
	if out, err := run("lint", "openapi.yaml"); err != nil {
		if vout, verr := run("--version"); verr != nil {
			t.Skipf("cannot run %s (no npm registry, or a Node.js it does not support): %v\n%s", redoclyCLI, verr, vout)
		}
		t.Fatalf("redocly lint openapi.yaml: %v\n%s", err, out)
	}
}
