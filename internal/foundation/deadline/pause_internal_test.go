package deadline

import (
	"testing"
	"time"
)

// The pause between runs doubles while they find nothing, up to its
// bound, and is one interval again after a run that found work.
func TestThePauseDoublesWhileIdleAndWorkResetsIt(t *testing.T) {
	const every, most = time.Second, 16 * time.Second
	pause := every
	var got []time.Duration
	for _, worked := range []bool{false, false, false, false, false, true, false} {
		pause = nextPause(pause, every, most, worked)
		got = append(got, pause)
	}
	want := []time.Duration{2 * time.Second, 4 * time.Second, 8 * time.Second, 16 * time.Second, 16 * time.Second, time.Second, 2 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pauses %v, want %v", got, want)
		}
	}
}
