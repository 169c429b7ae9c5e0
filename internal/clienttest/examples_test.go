package clienttest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/testenv"
)

// The client's examples live in its own package, where its documentation
// shows them, and are run here against the real service: the client's
// module cannot start one.
func TestTheClientsExamplesRunAgainstTheService(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH to run the client's examples with")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "client"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Without vet: the suite vets the client's package itself.
	cmd := testenv.GoCommand(ctx, "test", "-count=1", "-vet=off", "-v", "-run", "^Example", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "COUNTERS_CLIENT_EXAMPLES_URL="+serviceURL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the client's examples failed: %v\n%s", err, out)
	}
	passed := len(regexp.MustCompile(`(?m)^--- PASS: Example`).FindAll(out, -1))
	if want := countExamples(t, dir); passed != want {
		t.Fatalf("%d of the client's %d examples passed:\n%s", passed, want, out)
	}
}

// countExamples counts the example functions in the client's test files, so
// that an example that silently stopped running fails the test above.
func countExamples(t *testing.T, dir string) int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n += len(regexp.MustCompile(`(?m)^func Example`).FindAll(b, -1))
	}
	if n == 0 {
		t.Fatal("found no examples in the client's package")
	}
	return n
}
