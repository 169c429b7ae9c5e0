package readmetest_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// The README's map ("Where things live") is true for every package: each
// package of the module is named in it, and each package it names in its
// first column exists. A package added without a row, or moved or removed
// with its row left behind, fails here by name.
func TestTheREADMEMapNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "## Where things live")
	if start < 0 {
		t.Fatal(`README.md has no "## Where things live"`)
	}
	section := text[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	named, rows := map[string]bool{}, map[string]bool{}
	code := regexp.MustCompile("`([a-z][a-z0-9_./-]*)`")
	for _, line := range strings.Split(section, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 3 {
			continue
		}
		for _, m := range code.FindAllStringSubmatch(line, -1) {
			named[strings.TrimSuffix(m[1], "/")] = true
		}
		for _, m := range code.FindAllStringSubmatch(cells[1], -1) {
			rows[strings.TrimSuffix(m[1], "/")] = true
		}
	}

	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "github.com/countersvc/countersvc/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		dir := strings.TrimPrefix(strings.TrimPrefix(p, "github.com/countersvc/countersvc"), "/")
		if dir == "" {
			dir = "main.go"
		}
		if !named[dir] {
			t.Errorf("README.md's map does not name the package %s", dir)
		}
	}
	for row := range rows {
		if _, err := os.Stat("../../" + row); err != nil {
			t.Errorf("README.md's map has a row for %s, which does not exist", row)
		}
	}
}
