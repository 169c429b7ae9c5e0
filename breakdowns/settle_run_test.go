package breakdowns

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"
)

// idleSettler has pending rows only while pending is set, and counts the
// passes (one Settle call each, the batch never full).
type idleSettler struct {
	pending atomic.Bool
	passes  atomic.Int64
}

func (s *idleSettler) Settle(context.Context, int) (int, error) {
	s.passes.Add(1)
	if s.pending.Swap(false) {
		return 1, nil
	}
	return 0, nil
}

func (s *idleSettler) RollupLabels(context.Context, time.Time, int) (int, error) { return 0, nil }

// An idle Run makes a few passes where it made one an interval, and the
// pass after rows appear (at most MaxPause later) settles them.
func TestAnIdleRunBacksOffAndStillFindsNewRows(t *testing.T) {
	const every = 10 * time.Millisecond
	s := &idleSettler{}
	run := &Settling{Store: s, Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxPause: 8 * every}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); run.Run(ctx, every) }()
	defer func() { cancel(); <-done }()

	// Pauses of 20, 40, 80, 80, ... ms: about 7 passes in 600 ms where
	// every 10 ms made 60.
	start := time.Now()
	time.Sleep(600 * time.Millisecond)
	elapsed := time.Since(start)
	if n := s.passes.Load(); n < 2 || n > int64(elapsed/every)/4 {
		t.Fatalf("%d passes in %v of nothing to do; want about 7 (pauses doubling to 80 ms)", n, elapsed)
	}
	s.pending.Store(true)
	deadline := time.Now().Add(5 * time.Second)
	for s.pending.Load() {
		if time.Now().After(deadline) {
			t.Fatal("no pass took the pending rows within 5 s")
		}
		time.Sleep(time.Millisecond)
	}
}
