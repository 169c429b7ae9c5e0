package coalesce

import (
	"fmt"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// A round of labelled steps, each of its own labels (a page's hits), is
// split into its parts in one allocation, whatever its size.
func TestPartsOfDistinctExtrasAllocateOnce(t *testing.T) {
	now := time.Now()
	for _, steps := range []int{1, 20, 1024} {
		extras := make([]counters.Extra, steps)
		for i := range extras {
			extras[i] = kind{"referrer", fmt.Sprint(i)}
		}
		ws := waiters(now, extras...)
		if got := len(partsOf(ws, now)); got != steps {
			t.Fatalf("%d steps: %d parts, want %d", steps, got, steps)
		}
		if n := testing.AllocsPerRun(20, func() { partsOf(ws, now) }); n != 1 {
			t.Errorf("%d steps: %v allocations, want 1", steps, n)
		}
	}
}
