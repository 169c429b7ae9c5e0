package clienttest

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
)

// serviceURL is where the examples find the service: in the tests, one
// built by internal/wire as production builds it, on a real MariaDB.
var serviceURL = "http://localhost:8080"

// shared is that service; tests that use their own names share it.
var shared *apptest.Env

func TestMain(m *testing.M) {
	// Every test and example here needs the service, and so MariaDB:
	// -short (scripts/test -short) leaves them all out.
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipped: the client's tests need the service, which -short leaves out")
		os.Exit(0)
	}
	tb := &mainTB{}
	code := func() int {
		defer tb.cleanup()
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintln(os.Stderr, "starting the service for the examples:", r)
				os.Exit(1)
			}
		}()
		shared = apptest.New(tb)
		serviceURL = shared.URL
		return m.Run()
	}()
	os.Exit(code)
}

// mainTB lets TestMain start a service with the test helpers, which take a
// testing.TB: examples have none, and a service started in a test would
// stop before they run. Only what the helpers call is implemented; the
// embedded nil TB panics on anything else, which a test run shows.
type mainTB struct {
	testing.TB
	cleanups []func()
}

func (*mainTB) Helper()                           {}
func (*mainTB) Name() string                      { return "client_examples" }
func (*mainTB) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (*mainTB) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
func (*mainTB) Logf(format string, args ...any)   { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *mainTB) Cleanup(f func())                { t.cleanups = append(t.cleanups, f) }

func (t *mainTB) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}
