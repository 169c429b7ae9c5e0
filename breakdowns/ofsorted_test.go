package breakdowns_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/breakdowns"
)

// OfSorted builds the Extra that Of builds of the same labels, and refuses
// what Validate refuses with its message, a separator byte included.
func TestOfSortedIsOfWithoutAMap(t *testing.T) {
	tests := []struct {
		name   string
		labels breakdowns.Labels
	}{
		{"none", breakdowns.Labels{}},
		{"one", breakdowns.Labels{"channel": "web"}},
		{"eight", breakdowns.Labels{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": "8"}},
		{"nine", breakdowns.Labels{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5", "f": "6", "g": "7", "h": "8", "i": "9"}},
		{"a bad key", breakdowns.Labels{"Channel": "web"}},
		{"an empty value", breakdowns.Labels{"b": "", "a": "x"}},
		{"a value too long", breakdowns.Labels{"a": strings.Repeat("x", breakdowns.MaxLabelValueLen+1)}},
		{"a value with the separator", breakdowns.Labels{"a": "x\x00y", "b": "z"}},
		{"a key with the separator", breakdowns.Labels{"a\x00b": "x"}},
		{"not printable", breakdowns.Labels{"a": "x\u200by"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sorted []breakdowns.Label
			for _, k := range tt.labels.Keys() {
				sorted = append(sorted, breakdowns.Label{Key: []byte(k), Value: []byte(tt.labels[k])})
			}
			got, err := breakdowns.OfSorted(slices.Clone(sorted))
			wantErr := tt.labels.Validate()
			if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
				t.Fatalf("error %v, want %v", err, wantErr)
			}
			if err == nil && got != breakdowns.Of(tt.labels) {
				t.Errorf("OfSorted = %#v, want %#v", got, breakdowns.Of(tt.labels))
			}
		})
	}
}
