package app

import (
	"testing"
	"time"
)

// During an outage the log has one 503 a second, each saying how many it
// left out since the one before.
func TestTheLogHasOneUnavailableRequestASecond(t *testing.T) {
	var o outageLog
	t0 := time.Unix(1000, 0)
	steps := []struct {
		at      time.Duration
		logged  bool
		skipped int
	}{
		{0, true, 0},
		{10 * time.Millisecond, false, 0},
		{500 * time.Millisecond, false, 0},
		{999 * time.Millisecond, false, 0},
		{time.Second, true, 3},
		{1500 * time.Millisecond, false, 0},
		{5 * time.Second, true, 1},
		{6 * time.Second, true, 0},
	}
	for _, s := range steps {
		logged, skipped := o.admit(t0.Add(s.at))
		if logged != s.logged || skipped != s.skipped {
			t.Errorf("at %v: logged %v with %d left out, want %v with %d", s.at, logged, skipped, s.logged, s.skipped)
		}
	}
}
