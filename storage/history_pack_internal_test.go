package storage

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/countersvc/countersvc/history"
)

// Packed days read back as they were written, whatever their figures:
// zeros, negatives, the int64 extremes, and widths that cross 64-bit words.
func TestPackedDaysReadBackAsWritten(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	figs := func(full bool, gen func(i int) int64) []int64 {
		out := make([]int64, figureCount(full))
		for i := range out {
			out[i] = gen(i)
		}
		return out
	}
	tests := []struct {
		name string
		days []packedDay
	}{
		{"empty month", nil},
		{"a quiet day", []packedDay{{day: 0, full: true, figs: figs(true, func(i int) int64 { return 0 })}}},
		{"one quarter", []packedDay{{day: 30, full: true, figs: figs(true, func(i int) int64 {
			if i == 40 {
				return 1
			}
			return 0
		})}}},
		{"busy days of both forms", []packedDay{
			{day: 3, full: true, figs: figs(true, func(int) int64 { return r.Int64N(100) + 1 })},
			{day: 4, full: false, figs: figs(false, func(int) int64 { return r.Int64N(400) - 200 })},
		}},
		{"extremes", []packedDay{
			{day: 1, full: false, figs: figs(false, func(i int) int64 { return []int64{math.MinInt64, math.MaxInt64, -1, 0, 1}[i%5] })},
		}},
		{"odd widths", []packedDay{
			{day: 2, full: true, figs: figs(true, func(int) int64 { return r.Int64N(1<<40) - 1<<39 })},
			{day: 9, full: false, figs: figs(false, func(int) int64 { return r.Int64() })},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := unpackDays(packDays(nil, tt.days))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.days) {
				t.Fatalf("read %d days, wrote %d", len(got), len(tt.days))
			}
			for i := range got {
				if got[i].day != tt.days[i].day || got[i].full != tt.days[i].full || !slices.Equal(got[i].figs, tt.days[i].figs) {
					t.Fatalf("day %d: read %+v, wrote %+v", i, got[i], tt.days[i])
				}
			}
		})
	}
}

// A day thinned to segments still sums every quarter, each in the segment
// that starts at or before it.
func TestSegmentsSumTheQuartersBetweenBoundaries(t *testing.T) {
	t.Parallel()
	var q [history.QuartersPerDay]int64
	for i := range q {
		q[i] = int64(i + 1)
	}
	segs, ok := segments(q[:])
	if !ok {
		t.Fatal("no overflow expected")
	}
	for i, b := range history.Boundaries {
		end := history.QuartersPerDay
		if i+1 < len(history.Boundaries) {
			end = history.Boundaries[i+1]
		}
		var want int64
		for j := b; j < end; j++ {
			want += q[j]
		}
		if got := segs[i]; got != want {
			t.Fatalf("segment %d (quarters %d to %d) = %d, want %d", i, b, end, got, want)
		}
	}
	if _, ok := segments([]int64{math.MaxInt64, 1}); ok {
		t.Fatal("a sum beyond int64 must be refused")
	}
}
