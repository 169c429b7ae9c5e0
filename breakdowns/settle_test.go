package breakdowns

import (
	"context"
	"errors"
	"testing"
	"time"
)

// settler answers Settle from a list of results, then 0, and rolls up
// nothing, noting before.
type settler struct {
	results []int
	fail    int // the call (from 1) that fails; 0: none
	calls   int
	before  time.Time
}

func (s *settler) RollupLabels(_ context.Context, before time.Time, _ int) (int, error) {
	s.before = before
	return 0, nil
}

func (s *settler) Settle(_ context.Context, limit int) (int, error) {
	s.calls++
	if s.calls == s.fail {
		return 1, errors.New("boom")
	}
	if len(s.results) == 0 {
		return 0, nil
	}
	n := min(s.results[0], limit)
	s.results = s.results[1:]
	return n, nil
}

// A pass settles batch after batch while they come back full, and stops
// at the first that does not (or fails), reporting what it settled.
func TestAPassSettlesUntilABatchIsNotFull(t *testing.T) {
	tests := []struct {
		name      string
		results   []int
		fail      int
		wantN     int
		wantCalls int
		wantErr   bool
	}{
		{"nothing pending", nil, 0, 0, 1, false},
		{"less than a batch", []int{3}, 0, 3, 1, false},
		{"two full batches and a rest", []int{10, 10, 4}, 0, 24, 3, false},
		{"full batches to the end", []int{10, 10}, 0, 20, 3, false},
		{"a failing batch ends the pass", []int{10, 10, 10}, 2, 11, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &settler{results: tt.results, fail: tt.fail}
			now := time.Date(2026, 3, 1, 0, 30, 0, 0, time.FixedZone("", -3600))
			n, err := (&Settling{Store: s, Now: func() time.Time { return now }, Batch: 10}).Pass(context.Background())
			if n != tt.wantN || s.calls != tt.wantCalls || (err != nil) != tt.wantErr {
				t.Fatalf("Pass = %d, %v after %d calls; want %d, error %v after %d", n, err, s.calls, tt.wantN, tt.wantErr, tt.wantCalls)
			}
			// 1 March 01:30 UTC: days before 28 February roll up.
			if want := time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC); !tt.wantErr && !s.before.Equal(want) {
				t.Fatalf("rolled up the days before %v, want %v", s.before, want)
			}
		})
	}
}
