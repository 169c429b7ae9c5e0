package app_test

import (
	"strings"
	"sync"
	"testing"
)

// browserSlots bounds how many tests drive Chromium at once. The browser
// tests run in parallel with the rest (they mostly wait on the service and
// on timers), but each Chromium takes hundreds of MiB and a core while it
// starts: more than two at once on a small machine slowed every test
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
