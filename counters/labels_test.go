package counters_test

import (
	"strings"
	"testing"

	"github.com/countersvc/countersvc/counters"
)

// Labels: at most eight, keys of a-z, 0-9 and _ up to 32 characters,
// values of 1 to 128 bytes of printable UTF-8; the first bad one in key
// order is named.
func TestLabelsAreValidated(t *testing.T) {
	eight := counters.Labels{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		eight[k] = "v"
	}
	nine := counters.Labels{"i": "v"}
	for k, v := range eight {
		nine[k] = v
	}
	tests := []struct {
		name    string
		labels  counters.Labels
		want    string
		message string
	}{
		{"none", nil, "", ""},
		{"a channel and a region", counters.Labels{"channel": "web", "region": "EU"}, "", ""},
		{"eight", eight, "", ""},
		{"nine", nine, counters.EINVALID, "An increment carries at most 8 labels, not 9."},
		{"a key with a capital", counters.Labels{"Channel": "web"}, counters.EINVALID, ""},
		{"a key with a dash", counters.Labels{"my-key": "web"}, counters.EINVALID, ""},
		{"an empty key", counters.Labels{"": "web"}, counters.EINVALID, ""},
		{"the longest key", counters.Labels{strings.Repeat("k", 32): "web"}, "", ""},
		{"a key too long", counters.Labels{strings.Repeat("k", 33): "web"}, counters.EINVALID, ""},
		{"an empty value", counters.Labels{"channel": ""}, counters.EINVALID, `The value of label "channel" must be 1 to 128 bytes long, not 0.`},
		{"the longest value", counters.Labels{"channel": strings.Repeat("v", 128)}, "", ""},
		{"a value too long", counters.Labels{"channel": strings.Repeat("v", 129)}, counters.EINVALID, ""},
		{"a value not UTF-8", counters.Labels{"channel": "\xff"}, counters.EINVALID, `The value of label "channel" must be valid UTF-8.`},
		{"a value with a control character", counters.Labels{"channel": "w\teb"}, counters.EINVALID, ""},
		{"a value with an invisible character", counters.Labels{"channel": "w\u200beb"}, counters.EINVALID, ""},
		{"a value in any script", counters.Labels{"city": "Zürich 東京"}, "", ""},
		{"the first bad key in order", counters.Labels{"b": "", "a": strings.Repeat("v", 129)}, counters.EINVALID, `The value of label "a" must be 1 to 128 bytes long, not 129.`},
	}
	for _, tc := range tests {
		err := tc.labels.Validate()
		wantCode(t, tc.name, err, tc.want)
		if tc.message != "" && counters.ErrorMessage(err) != tc.message {
			t.Errorf("%s: message %q, want %q", tc.name, counters.ErrorMessage(err), tc.message)
		}
	}
	if got := (counters.Labels{"z": "1", "a": "2", "m": "3"}).Keys(); strings.Join(got, ",") != "a,m,z" {
		t.Errorf("Keys() = %v, want byte order", got)
	}
}
