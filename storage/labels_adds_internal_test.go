package storage

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
)

// benchRound is a coalesced round of the 8-label hot counter (cmd/bench's
// breakdowns scenario): steps of eight labels drawn at random, one part
// each.
func benchRound(steps int) counters.Increment {
	r := rand.New(rand.NewPCG(1, 2))
	pick := func(vs ...string) string { return vs[r.IntN(len(vs))] }
	inc := counters.Increment{Name: "bench/bd-labelled", By: int64(steps)}
	now := time.Now()
	for range steps {
		inc.Parts = append(inc.Parts, counters.Part{At: now, By: 1, Extra: breakdowns.Of(breakdowns.Labels{
			"referrer": fmt.Sprintf("site%d.example", 1+r.IntN(20)), "country": fmt.Sprintf("C%d", 1+r.IntN(10)),
			"browser": pick("Chrome", "Firefox", "Safari", "Edge", "Opera"), "os": pick("Windows", "macOS", "Linux", "Android"),
			"device": pick("desktop", "mobile", "tablet"), "source": pick("(none)", "newsletter", "twitter", "hn", "reddit"),
			"medium": pick("(none)", "email", "social"), "campaign": pick("(none)", "launch", "spring", "black-friday", "summer"),
		})})
	}
	return inc
}

// What a round's labels cost the service before its statement: their
// adds, summed per value, and packed for the counter's label slot.
func BenchmarkLabelSlotsOfARound(b *testing.B) {
	for _, steps := range []int{1, 20} {
		b.Run(fmt.Sprint(steps, "steps"), func(b *testing.B) {
			sorted := []counters.Increment{benchRound(steps)}
			now := time.Now()
			b.ReportAllocs()
			for b.Loop() {
				labelSlots(sorted, now)
			}
		})
	}
}

// labelAddsAsMapped is how labelAdds worked out the adds before it
// grouped them by day and label: a map of every (counter, day, label,
// value), then a stable sort.
func labelAddsAsMapped(changes []counters.Change) []labelAdd {
	type key struct {
		name, label, value string
		day                time.Time
	}
	at := map[key]int{}
	var adds []labelAdd
	for _, c := range changes {
		for _, p := range c.Steps {
			l, ok := p.Extra.(breakdowns.Labelled)
			if p.By == 0 || !ok {
				continue
			}
			day, _ := history.QuarterOf(p.At)
			for k, v := range l.All() {
				i, ok := at[key{c.Name, k, v, day}]
				if ok {
					if sum, fits := counters.Add(adds[i].by, p.By); fits {
						adds[i].by = sum
						continue
					}
				}
				at[key{c.Name, k, v, day}] = len(adds)
				adds = append(adds, labelAdd{name: c.Name, label: k, day: day, value: v, by: p.By})
			}
		}
	}
	slices.SortStableFunc(adds, func(a, b labelAdd) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := a.day.Compare(b.day); c != 0 {
			return c
		}
		if c := strings.Compare(a.label, b.label); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
	return adds
}

// labelAdds lists the same adds in the same order as a map of every
// value would: rounds of one hot counter, of many counters, steps across
// midnight, labels of different keys, values past the point where a
// label keeps a map of them, sums that overflow int64, unlabelled and
// zero steps among them.
func TestLabelAddsSumEachValueOfACountersDayInOrder(t *testing.T) {
	midnight := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name                      string
		counters, steps, values   int
		keys                      []string
		acrossMidnight, overflows bool
	}{
		{"a hot counter's round", 1, 20, 5, []string{"browser", "country", "referrer"}, false, false},
		{"one step", 1, 1, 3, []string{"a", "b"}, false, false},
		{"many counters", 50, 200, 4, []string{"channel"}, false, false},
		{"steps across midnight", 3, 60, 3, []string{"a", "b", "c"}, true, false},
		{"labels of different keys", 2, 80, 3, []string{"a", "b", "c", "d", "e", "f", "g", "h"}, false, false},
		{"more values than a label compares one by one", 1, 400, 3 * chainMapped, []string{"referrer", "os"}, false, false},
		{"sums that overflow", 2, 40, 2, []string{"a", "b"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(len(tt.name))))
			changes := make([]counters.Change, tt.counters)
			for i := range changes {
				changes[i].Name = fmt.Sprintf("c%02d", (i*7)%tt.counters) // not in name order
			}
			for range tt.steps {
				c := &changes[r.IntN(len(changes))]
				at := midnight.Add(time.Duration(r.IntN(3600)) * time.Second)
				if tt.acrossMidnight && r.IntN(2) == 0 {
					at = midnight.Add(-time.Duration(1+r.IntN(3600)) * time.Second)
				}
				by := int64(1 + r.IntN(3))
				if tt.overflows {
					by = math.MaxInt64/2 + int64(r.IntN(10))
				}
				if r.IntN(10) == 0 {
					by = 0
				}
				labels := breakdowns.Labels{}
				for _, k := range tt.keys {
					if len(tt.keys) < 4 || r.IntN(2) == 0 {
						labels[k] = fmt.Sprintf("v%d", r.IntN(tt.values))
					}
				}
				step := counters.Part{At: at, By: by, Extra: breakdowns.Of(labels)}
				if r.IntN(8) == 0 {
					step.Extra = nil
				}
				c.Steps = append(c.Steps, step)
			}
			got, want := labelAdds(changes), labelAddsAsMapped(changes)
			if !slices.Equal(got, want) {
				t.Fatalf("labelAdds:\n%v\nwant:\n%v", got, want)
			}
			if len(want) == 0 {
				t.Fatal("the test made no adds")
			}
		})
	}
}

// A settling pass reads each spelt value of its rows once: the same adds
// as unpackAdds, their strings copied out of the row (whose buffer the
// driver reuses), and a row of values it has seen costs no allocation.
func TestUnpackingInternedCopiesEachSpeltValueOnce(t *testing.T) {
	adds := []labelAdd{{label: "referrer", value: "site7.example", by: 2}, {label: "browser", value: "Chrome", by: 1},
		{label: "custom", value: "spelt out", by: -3}, {label: "country", value: "C3", by: 1}}
	row := packAdds(adds)
	var want []packedAdd
	if err := unpackAdds(row, func(label, value string, by int64) { want = append(want, packedAdd{label, value, by}) }); err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for range 2 {
		b := slices.Clone(row)
		var got []packedAdd
		if err := unpackAddsInterned(b, seen, func(label, value string, by int64) { got = append(got, packedAdd{label, value, by}) }); err != nil {
			t.Fatal(err)
		}
		clear(b) // the driver's buffer, reused
		if !slices.Equal(got, want) {
			t.Fatalf("unpacked %v, want %v", got, want)
		}
	}
	if n := testing.AllocsPerRun(50, func() {
		if err := unpackAddsInterned(row, seen, func(string, string, int64) {}); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a row of values seen before: %v allocations, want 0", n)
	}
	if err := unpackAddsInterned(append(slices.Clone(row), 0x85), seen, func(string, string, int64) {}); err == nil {
		t.Error("a row cut short unpacked without an error")
	}
}
