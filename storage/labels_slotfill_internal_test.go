package storage

import (
	"testing"

	"github.com/countersvc/countersvc/counters"
)

// Rounds of one counter in flight together count each other's labels: of
// two that fit the slot alone but not together, the second moves it out,
// and the rounds after that move append again, counting the rounds that
// were still in flight, since those may land after the move.
func TestSlotFillCountsRoundsInFlight(t *testing.T) {
	t.Parallel()
	var f slotFill
	round := []counters.Increment{{Name: "hits/page"}}
	adds := func(n int) []slotLabels { return []slotLabels{{adds: make([]byte, n)}} }
	const size = 100
	if !f.reserve(round, adds(60), size) {
		t.Fatal("the first round of 60 bytes did not fit an empty slot of 100")
	}
	if f.reserve(round, adds(60), size) {
		t.Fatal("a second round of 60 bytes fitted beside the first, in flight")
	}
	f.moving(round, adds(60))
	if f.reserve(round, adds(50), size) {
		t.Fatal("after the move, a round of 50 fitted beside the 60 still in flight")
	}
	f.done(round, adds(60), true)
	f.moving(round, adds(50))
	if !f.reserve(round, adds(90), size) {
		t.Fatal("once nothing was in flight, a moved slot did not take 90 bytes")
	}
	f.done(round, adds(90), false)
	if !f.reserve(round, adds(100), size) {
		t.Fatal("a round the slot refused still held its room")
	}
}
