package coalesce

import (
	"slices"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/foundation/batch"
)

// kind is a test's kind of counters.Extra, comparable as every kind is.
type kind struct{ a, b string }

func waiters(at time.Time, extras ...counters.Extra) []*waiter {
	out := make([]*waiter, len(extras))
	for i, x := range extras {
		out[i] = &batch.Call[step, int64]{Req: step{name: "c", by: int64(i + 1), at: at, extra: x}}
	}
	return out
}

// A round's steps are summed into one part per run of equal Extra (and
// quarter hour), compared without being read; steps without one, all in
// the current quarter, are no parts at all: the store's plain path.
func TestARoundSumsItsStepsOfEqualExtraIntoOnePart(t *testing.T) {
	now := time.Date(2026, 11, 28, 14, 7, 0, 0, time.UTC)
	q := now.Truncate(counters.HistoryGrain)
	web, app := kind{"channel", "web"}, kind{"channel", "app"}
	tests := []struct {
		name   string
		extras []counters.Extra
		want   []counters.Part
	}{
		{"none", []counters.Extra{nil, nil, nil}, nil},
		{"all equal", []counters.Extra{web, kind{"channel", "web"}}, []counters.Part{{At: q, By: 3, Extra: web}}},
		{"runs", []counters.Extra{web, web, app, nil, nil}, []counters.Part{{At: q, By: 3, Extra: web}, {At: q, By: 3, Extra: app}, {At: q, By: 9}}},
		{"one among none", []counters.Extra{nil, web}, []counters.Part{{At: q, By: 1}, {At: q, By: 2, Extra: web}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := partsOf(waiters(now, tt.extras...), now)
			if !slices.EqualFunc(got, tt.want, func(a, b counters.Part) bool { return a.At.Equal(b.At) && a.By == b.By && a.Extra == b.Extra }) {
				t.Fatalf("parts %v, want %v", got, tt.want)
			}
		})
	}
}

// A round of steps without Extra, the hot counter's, costs no allocation
// to split: carrying an Extra costs the steps that do not carry one
// nothing.
func BenchmarkPartsOfStepsWithoutExtra(b *testing.B) {
	now := time.Now()
	ws := waiters(now, make([]counters.Extra, 64)...)
	b.ReportAllocs()
	for b.Loop() {
		if partsOf(ws, now) != nil {
			b.Fatal("parts of steps without Extra in the current quarter")
		}
	}
}

func TestPartsOfStepsWithoutExtraAllocateNothing(t *testing.T) {
	now := time.Now()
	ws := waiters(now, make([]counters.Extra, 64)...)
	if n := testing.AllocsPerRun(100, func() { partsOf(ws, now) }); n != 0 {
		t.Fatalf("%v allocations, want 0", n)
	}
}
