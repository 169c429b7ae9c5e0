package client_test

import (
	"flag"
	"os"
	"testing"
)

// serviceURL is the service the examples call. The client's module has no
// service of its own (it imports nothing but the standard library), so a
// plain `go test` here leaves the examples out; internal/clienttest starts
// the real service on MariaDB and runs them against it with this variable
// set (TestTheClientsExamplesRunAgainstTheService).
var serviceURL = os.Getenv("COUNTERS_CLIENT_EXAMPLES_URL")

func TestMain(m *testing.M) {
	flag.Parse()
	if serviceURL == "" && flag.Lookup("test.run").Value.String() == "" {
		// Examples match -run like tests: ^Test keeps the tests only.
		_ = flag.Set("test.run", "^Test")
	}
	os.Exit(m.Run())
}
