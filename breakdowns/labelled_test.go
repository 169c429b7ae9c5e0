package breakdowns_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/countersvc/countersvc/breakdowns"
)

// A labelled step's Extra: nil without labels, equal for equal labels
// whatever the map's order (the coalescer sums steps by it), and its
// labels read back in key order, as a map and as the JSON object the
// idempotency fingerprints have always spelled.
func TestALabelledStepCarriesItsLabelsInKeyOrder(t *testing.T) {
	tests := []struct {
		name   string
		labels breakdowns.Labels
		keys   []string
		json   string
	}{
		{"one label", breakdowns.Labels{"channel": "web"}, []string{"channel"}, `{"channel":"web"}`},
		{"three, given out of order", breakdowns.Labels{"region": "EU", "channel": "web", "b2b": "no"}, []string{"b2b", "channel", "region"}, `{"b2b":"no","channel":"web","region":"EU"}`},
		{"values with spaces and unicode", breakdowns.Labels{"city": "São Paulo", "a": "x y"}, []string{"a", "city"}, `{"a":"x y","city":"São Paulo"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			extra := breakdowns.Of(tt.labels)
			l, ok := extra.(breakdowns.Labelled)
			if !ok {
				t.Fatalf("Of = %T, want breakdowns.Labelled", extra)
			}
			if again := breakdowns.Of(maps.Clone(tt.labels)); again != extra {
				t.Fatalf("Of of equal labels differs: %v and %v", again, extra)
			}
			var keys []string
			for k, v := range l.All() {
				keys = append(keys, k)
				if tt.labels[k] != v {
					t.Errorf("All yields %s=%q, want %q", k, v, tt.labels[k])
				}
			}
			if !slices.Equal(keys, tt.keys) {
				t.Errorf("All yields keys %v, want %v", keys, tt.keys)
			}
			for range l.All() {
				break // a caller may stop early
			}
			if got := l.Labels(); !maps.Equal(got, tt.labels) {
				t.Errorf("Labels = %v, want %v", got, tt.labels)
			}
			if b, err := json.Marshal(l); err != nil || string(b) != tt.json {
				t.Errorf("JSON %s, %v; want %s", b, err, tt.json)
			}
		})
	}
	for _, none := range []breakdowns.Labels{nil, {}} {
		if extra := breakdowns.Of(none); extra != nil {
			t.Errorf("Of(%v) = %v, want nil: a step without labels carries nothing", none, extra)
		}
	}
	if breakdowns.Of(breakdowns.Labels{"channel": "web"}) == breakdowns.Of(breakdowns.Labels{"channel": "shop"}) {
		t.Error("different labels made equal Extras")
	}
}
