package readmetest_test

import (
	"fmt"
	"os"
	"testing"
)

// TestMain makes the directory the examples' commands are built into
// (see build) and removes it when the tests have run.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "readmetest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	commands.dir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
