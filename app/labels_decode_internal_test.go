package app

import (
	"encoding/json"
	"testing"

	"github.com/countersvc/countersvc/breakdowns"
)

// A labels object reads the same whether scanLabels takes it or leaves
// it to encoding/json (decodeLabels, how every body was read before): equal Extras (the coalescer sums steps by them),
// equal errors, nothing with breakdowns off; the bytes it read are
// copied, as Fiber reuses the body's memory.
func TestLabelsReadTheSameScannedOrDecoded(t *testing.T) {
	tests := []struct {
		name    string
		raw     string
		scanned bool // scanLabels takes it
	}{
		{"eight labels out of key order", `{"referrer": "site7.example", "country": "C3", "browser": "Edge", "os": "Linux", "device": "mobile", "source": "(none)", "medium": "email", "campaign": "spring"}`, true},
		{"one label", `{"channel":"web"}`, true},
		{"white space everywhere", " {\n\t\"b\" :\r\"2\" ,  \"a\":\"1\" } ", true},
		{"unicode values", `{"city": "São Paulo", "a": "x y"}`, true},
		{"empty object", `{}`, true},
		{"empty object with space", `{ }`, true},
		{"keys that share a prefix", `{"ab": "1", "a": "2", "abc": "3"}`, true},
		{"an escaped value", `{"city": "S\u00e3o Paulo"}`, false},
		{"an escaped key", `{"ch\u0061nnel": "web"}`, false},
		{"a quote in a value", `{"q": "say \"hi\""}`, false},
		{"a key given twice: the last wins", `{"channel": "web", "channel": "shop"}`, false},
		{"invalid UTF-8, which encoding/json replaces", "{\"city\": \"S\xe3o\"}", false},
		{"nine labels", `{"a":"1","b":"1","c":"1","d":"1","e":"1","f":"1","g":"1","h":"1","i":"1"}`, false},
		{"a key of capitals", `{"Channel": "web"}`, true},
		{"a key too long", `{"abcdefghijklmnopqrstuvwxyzabcdefg": "web"}`, true},
		{"an empty value", `{"channel": ""}`, true},
		{"a value too long", `{"channel": "` + string(make129()) + `"}`, true},
		{"a control character escaped", `{"channel": "a\u0000b"}`, false},
		{"an invisible character", "{\"channel\": \"a\u200bb\"}", true},
		{"the first bad label in key order is named", `{"z": "", "a": ""}`, true},
		{"a number", `{"channel": 1}`, false},
		{"null", `null`, false},
		{"a null value", `{"channel": null}`, false},
		{"an array", `["web"]`, false},
		{"a string", `"web"`, false},
		{"a nested object", `{"channel": {"a": "b"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf [breakdowns.MaxLabels]breakdowns.Label
			if _, ok := scanLabels([]byte(tt.raw), buf[:]); ok != tt.scanned {
				t.Errorf("scanLabels took it: %v, want %v", ok, tt.scanned)
			}
			for _, on := range []bool{true, false} {
				raw := []byte(tt.raw)
				got, err := LabelsField(on).Read(raw)
				want, wantErr := decodeLabels(json.RawMessage(tt.raw), on)
				copy(raw, make([]byte, len(raw))) // the body's memory reused
				if got != want {
					t.Errorf("on=%v: Extra %#v, want %#v", on, got, want)
				}
				if (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
					t.Errorf("on=%v: error %v, want %v", on, err, wantErr)
				}
			}
		})
	}
}

func make129() []byte {
	b := make([]byte, breakdowns.MaxLabelValueLen+1)
	for i := range b {
		b[i] = 'x'
	}
	return b
}

// Reading a page hit's eight labels allocates their Extra and nothing
// else: no map, no string per key or value.
func TestScannedLabelsAllocateOnlyTheirExtra(t *testing.T) {
	raw := []byte(`{"referrer": "site7.example", "country": "C3", "browser": "Edge", "os": "Linux", "device": "mobile", "source": "(none)", "medium": "email", "campaign": "spring"}`)
	read := LabelsField(true).Read
	if n := testing.AllocsPerRun(100, func() {
		if _, err := read(raw); err != nil {
			t.Fatal(err)
		}
	}); n > 2 {
		t.Errorf("%v allocations, want at most 2: the packed labels and their Extra", n)
	}
}
