package client_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The package promises an application that vendors it nothing but the
// standard library: no module dependency, and nothing of the service.
func TestTheClientImportsOnlyTheStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			// Standard library paths have no dot in their first element.
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") || strings.HasPrefix(path, "github.com/countersvc/") {
				t.Errorf("%s imports %s, which is not the standard library", file, path)
			}
		}
	}
}
