package breakdowns_test

import (
	"strings"
	"testing"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
)

// Labels: at most eight, keys of a-z, 0-9 and _ up to 32 characters,
// values of 1 to 128 bytes of printable UTF-8; the first bad one in key
// order is named.
func TestLabelsAreValidated(t *testing.T) {
	eight := breakdowns.Labels{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		eight[k] = "v"
	}
	nine := breakdowns.Labels{"i": "v"}
	for k, v := range eight {
		nine[k] = v
	}
	tests := []struct {
		name    string
		labels  breakdowns.Labels
		want    string
		message string
	}{
		{"none", nil, "", ""},
		{"a channel and a region", breakdowns.Labels{"channel": "web", "region": "EU"}, "", ""},
		{"eight", eight, "", ""},
		{"nine", nine, counters.EINVALID, "An increment carries at most 8 labels, not 9."},
		{"a key with a capital", breakdowns.Labels{"Channel": "web"}, counters.EINVALID, ""},
		{"a key with a dash", breakdowns.Labels{"my-key": "web"}, counters.EINVALID, ""},
		{"an empty key", breakdowns.Labels{"": "web"}, counters.EINVALID, ""},
		{"the longest key", breakdowns.Labels{strings.Repeat("k", 32): "web"}, "", ""},
		{"a key too long", breakdowns.Labels{strings.Repeat("k", 33): "web"}, counters.EINVALID, ""},
		{"an empty value", breakdowns.Labels{"channel": ""}, counters.EINVALID, `The value of label "channel" must be 1 to 128 bytes long, not 0.`},
		{"the longest value", breakdowns.Labels{"channel": strings.Repeat("v", 128)}, "", ""},
		{"a value too long", breakdowns.Labels{"channel": strings.Repeat("v", 129)}, counters.EINVALID, ""},
		{"a value not UTF-8", breakdowns.Labels{"channel": "\xff"}, counters.EINVALID, `The value of label "channel" must be valid UTF-8.`},
		{"a value with a control character", breakdowns.Labels{"channel": "w\teb"}, counters.EINVALID, ""},
		{"a value with an invisible character", breakdowns.Labels{"channel": "w\u200beb"}, counters.EINVALID, ""},
		{"a value in any script", breakdowns.Labels{"city": "Zürich 東京"}, "", ""},
		{"the first bad key in order", breakdowns.Labels{"b": "", "a": strings.Repeat("v", 129)}, counters.EINVALID, `The value of label "a" must be 1 to 128 bytes long, not 129.`},
	}
	for _, tc := range tests {
		err := tc.labels.Validate()
		if got := counters.ErrorCode(err); got != tc.want {
			t.Errorf("%s: code %q (%v), want %q", tc.name, got, err, tc.want)
		}
		if tc.message != "" && counters.ErrorMessage(err) != tc.message {
			t.Errorf("%s: message %q, want %q", tc.name, counters.ErrorMessage(err), tc.message)
		}
	}
	if got := (breakdowns.Labels{"z": "1", "a": "2", "m": "3"}).Keys(); strings.Join(got, ",") != "a,m,z" {
		t.Errorf("Keys() = %v, want byte order", got)
	}
}
