package client_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// An application in a module of its own requires the client by its path
// and builds with it, and its go.sum holds no module of the service (nor
// any other: the client needs only the standard library) and its build
// list only itself and the client. The replace stands in for the proxy,
// which has no tag of this checkout.
func TestAnAppRequiresTheClientByItsPathAndTakesInNoServiceModule(t *testing.T) {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	app := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/shop\n\ngo 1.24\n\n" +
			"require github.com/countersvc/countersvc/client v0.1.0\n\n" +
			"replace github.com/countersvc/countersvc/client => " + dir + "\n",
		"main.go": `package main

import (
	"context"
	"fmt"

	"github.com/countersvc/countersvc/client"
)

func main() {
	c, err := client.New("http://localhost:8080", client.Options{})
	if err != nil {
		panic(err)
	}
	v, err := c.Increment(context.Background(), "shop/sales", 1, client.IdempotencyKey("order-1"))
	fmt.Println(v, err)
}
`,
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(app, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = app
		// Outside this workspace, offline, with the Go that runs the test.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOPROXY=off", "GOTOOLCHAIN=local")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("mod", "tidy")
	// With the flags this test was built with (-race): go test has then
	// compiled the standard library so already, and an empty build cache
	// does not compile it a second time without the race detector.
	goCmd(append(append([]string{"build"}, buildFlags()...), "-o", filepath.Join(app, "shop"), ".")...)
	if sum, err := os.ReadFile(filepath.Join(app, "go.sum")); err == nil && len(strings.TrimSpace(string(sum))) > 0 {
		t.Errorf("the app's go.sum holds modules, want none:\n%s", sum)
	}
	if got, want := strings.Fields(goCmd("list", "-m", "all")), []string{"example.com/shop", "github.com/countersvc/countersvc/client", "v0.1.0", "=>", dir}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("the app's build list %q, want only itself and the client %q", got, want)
	}
}

// buildFlags returns the flags this test binary was built with that
// change what the compiler or linker makes, as its build information says
// (internal/testenv.BuildFlags, which this module cannot import).
func buildFlags() []string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	var flags []string
	for _, s := range info.Settings {
		switch s.Key {
		case "-race", "-msan", "-asan", "-trimpath":
			if s.Value == "true" {
				flags = append(flags, s.Key)
			}
		case "-gcflags", "-asmflags", "-ldflags", "-tags":
			flags = append(flags, s.Key+"="+s.Value)
		}
	}
	return flags
}
