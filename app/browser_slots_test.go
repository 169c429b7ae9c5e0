package app_test

import (
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// browserSlots bounds how many tests drive Chromium (the one browser of
// the test binary, see theBrowser) at once. The browser tests run beside
// the rest, in TestWithABrowser's lanes, one for each slot (they mostly
// wait on the service and on timers),
// but each page's renderer takes a core while it loads and draws: more
// than two tests' pages at once on a small machine slowed every test
// around them without finishing the browser tests any sooner.
var browserSlots = make(chan struct{}, 2)

// browsing holds the top-level tests that hold a slot: a test's browsers
// (one after the other, or in its subtests) share its one slot.
var browsing = struct {
	sync.Mutex
	held map[string]bool
}{held: map[string]bool{}}

// browserSlot waits for a slot for tb's top-level test, unless it holds
// one already; the slot is given back when tb ends.
func browserSlot(tb testing.TB) {
	tb.Helper()
	top, _, _ := strings.Cut(tb.Name(), "/")
	browsing.Lock()
	held := browsing.held[top]
	browsing.held[top] = true
	browsing.Unlock()
	if held {
		return
	}
	browserSlots <- struct{}{}
	tb.Cleanup(func() {
		browsing.Lock()
		delete(browsing.held, top)
		browsing.Unlock()
		<-browserSlots
	})
}

// startBrowser starts cmd (a Chromium with Pdeathsig, so that it ends with
// the test binary) from an OS thread of its own, kept until until is
// closed. Pdeathsig fires when the thread that started the process ends,
// and a goroutine that locks its thread and returns without unlocking
// ends it (testenv's network-namespace dial does, in the tests beside): a
// browser started from such a thread was killed mid-test.
// testenv.startServer does the same for the servers.
func startBrowser(cmd *exec.Cmd, until <-chan struct{}) error {
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends after the browser
		started <- cmd.Start()
		<-until
	}()
	return <-started
}
