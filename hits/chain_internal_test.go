package hits

import (
	"slices"
	"testing"
)

// recordingStarter records the chains of each Start.
type recordingStarter struct {
	name   string
	starts *[][]string
}

func (r *recordingStarter) Start(cs []*Chain) {
	var names []string
	for _, c := range cs {
		names = append(names, r.name+":"+c.Name)
	}
	*r.starts = append(*r.starts, names)
}

func (*recordingStarter) Result(*Chain) (int64, error) { return 0, nil }

// Start hands each service's chains to its starter together, in order:
// the limits' answer of many hits is one hand-over to the coalescer, not
// one a hit.
func TestStartHandsOnEachStartersChainsTogether(t *testing.T) {
	var starts [][]string
	a, b := &recordingStarter{"a", &starts}, &recordingStarter{"b", &starts}
	var cs []*Chain
	for i, s := range []Starter{a, a, a, b, b, a} {
		c := &Chain{Name: string(rune('1' + i)), starter: s}
		if !c.Claim() {
			t.Fatalf("chain %d: not claimed", i)
		}
		cs = append(cs, c)
	}
	Start(cs)
	want := [][]string{{"a:1", "a:2", "a:3"}, {"b:4", "b:5"}, {"a:6"}}
	if !slices.EqualFunc(starts, want, slices.Equal) {
		t.Errorf("starts %v, want %v", starts, want)
	}
}
