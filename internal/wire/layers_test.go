package wire_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The import graph points one way. internal/foundation (the batching
// queue, deadlines, the median, the listener) imports nothing of the
// service's; the domains and adapters import only the foundation of
// internal/; the composition root (internal/wire, which also reads the
// configuration, and internal/migratecmd) is imported only by main, cmd/ and the test
// harnesses. A domain (counters, history, breakdowns, hits, ...) imports
// no adapter (storage, cache, coalesce, app): adapters depend on the
// domain, never the other way round. A package that points up fails here
// by name.
func TestImportsPointDownward(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "github.com/countersvc/countersvc/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/countersvc/countersvc"
	foundation := mod + "/internal/foundation/"
	root := func(p string) bool {
		return p == mod+"/internal/wire" || p == mod+"/internal/migratecmd"
	}
	adapter := func(p string) bool {
		switch strings.TrimPrefix(p, mod+"/") {
		case "storage", "cache", "coalesce", "app":
			return true
		}
		return false
	}
	domain := func(p string) bool {
		rest, ok := strings.CutPrefix(p, mod+"/")
		return ok && !adapter(p) && !strings.HasPrefix(rest, "internal/") && !strings.HasPrefix(rest, "cmd/") &&
			!strings.Contains(rest, "/") && rest != "client" && rest != "geoip" && rest != "scripts"
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		for _, imp := range imports {
			if !strings.HasPrefix(imp, mod+"/") {
				continue
			}
			switch {
			case strings.HasPrefix(pkg, foundation) && !strings.HasPrefix(imp, foundation):
				t.Errorf("%s is foundation but imports %s", pkg, imp)
			case pkg != mod && !strings.HasPrefix(pkg, mod+"/internal/") && !strings.HasPrefix(pkg, mod+"/cmd/") &&
				strings.HasPrefix(imp, mod+"/internal/") && !strings.HasPrefix(imp, foundation):
				t.Errorf("%s is a domain or adapter but imports %s, which is not foundation", pkg, imp)
			case domain(pkg) && adapter(imp):
				t.Errorf("%s is a domain but imports the adapter %s", pkg, imp)
			case root(imp) && strings.HasPrefix(pkg, mod+"/internal/") && !root(pkg) && !strings.HasSuffix(pkg, "test"):
				t.Errorf("%s imports the composition root %s", pkg, imp)
			}
		}
	}
}
