package readmetest_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain makes the directory the examples' commands are built into
// (see build) and removes it when the tests have run. It starts building
// the commands the guides run at once, while the tests start their
// services: the first guide to run countersctl waited for its build (a
// link of seconds) after its service was up.
func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "readmetest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	commands.dir = dir
	commandsOfTheGuides := []string{"./cmd/countersctl", "./docs/webhook-receiver"}
	if testing.Short() { // -short runs no example
		commandsOfTheGuides = nil
	}
	for _, pkg := range commandsOfTheGuides {
		go buildOnce(pkg) // a failure is the tests' to report, in build
	}
	code := m.Run()
	for _, pkg := range commandsOfTheGuides {
		buildOnce(pkg) // no build left writing into dir
	}
	os.RemoveAll(dir)
	os.Exit(code)
}
