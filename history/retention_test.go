package history

import (
	"context"
	"errors"
	"testing"
	"time"
)

// purger holds n pieces of history and hands out at most limit a call.
type purger struct {
	left   int64
	calls  int
	before []time.Time
	err    error
}

func (p *purger) PurgeHistory(_ context.Context, before time.Time, limit int) (int64, error) {
	p.calls++
	p.before = append(p.before, before)
	if p.err != nil {
		return 0, p.err
	}
	n := min(p.left, int64(limit))
	p.left -= n
	return n, nil
}

// A pass deletes batch by batch until a batch comes back short, always
// below the same horizon: the UTC midnight that starts the day Age ago.
func TestARetentionPassDeletesInBatchesBelowOneHorizon(t *testing.T) {
	now := time.Date(2025, 4, 17, 10, 7, 0, 0, time.FixedZone("x", 5*3600+45*60))
	for _, tt := range []struct {
		name        string
		pieces      int64
		batch       int
		wantCalls   int
		wantRemoved int64
		wantErr     bool
		failWith    error
	}{
		{"nothing to remove", 0, 10, 1, 0, false, nil},
		{"less than a batch", 7, 10, 1, 7, false, nil},
		{"exactly a batch, then an empty one", 10, 10, 2, 10, false, nil},
		{"several batches", 25, 10, 3, 25, false, nil},
		{"a failure ends the pass", 25, 10, 1, 0, true, errors.New("down")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &purger{left: tt.pieces, err: tt.failWith}
			r := &Retention{Store: p, Age: 30 * 24 * time.Hour, Now: func() time.Time { return now }, Batch: tt.batch, Pause: time.Microsecond}
			removed, err := r.Pass(context.Background())
			if (err != nil) != tt.wantErr || removed != tt.wantRemoved || p.calls != tt.wantCalls {
				t.Fatalf("removed %d in %d calls (%v), want %d in %d", removed, p.calls, err, tt.wantRemoved, tt.wantCalls)
			}
			want := time.Date(2025, 3, 18, 0, 0, 0, 0, time.UTC) // 04:22 UTC on the 17th, 30 days back
			for _, b := range p.before {
				if !b.Equal(want) {
					t.Fatalf("horizon %v, want %v", b, want)
				}
			}
		})
	}
}
