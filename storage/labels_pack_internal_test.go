package storage

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"
)

// packedAdd is what unpackAdds hands back for one add.
type packedAdd struct {
	label, value string
	by           int64
}

func unpacked(t *testing.T, b []byte) []packedAdd {
	t.Helper()
	var got []packedAdd
	if err := unpackAdds(b, func(label, value string, by int64) { got = append(got, packedAdd{label, value, by}) }); err != nil {
		t.Fatalf("unpackAdds(%q): %v", b, err)
	}
	return got
}

// spelt packs adds as every entry was packed before the codes: the label
// and the value each as its length and its bytes, then the step.
func spelt(adds []packedAdd) []byte {
	var b []byte
	for _, a := range adds {
		b = binary.AppendVarint(appendSpelt(b, a.label, a.value), a.by)
	}
	return b
}

// Packed adds read back as they were written, coded or spelt out: known
// labels and values, unknown ones, values of every length a label may
// have, steps of every size.
func TestPackedAddsReadBackAsWritten(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 64) // 128 bytes, the longest value
	tests := []struct {
		name string
		adds []packedAdd
	}{
		{"known labels and values", []packedAdd{{"browser", "Chrome", 1}, {"country", "(unknown)", 16}, {"device", "desktop", 3}, {"os", "macOS", 2}, {"referrer", "(direct)", 5}}},
		{"known labels, values spelt out", []packedAdd{{"referrer", "news.example.com", 1}, {"country", "DE", 2}, {"campaign", long, 7}, {"source", "x", -1}}},
		{"labels not in the table", []packedAdd{{"channel", "web", 1}, {"region", long, 2}, {strings.Repeat("k", 32), "(other)", 3}}},
		{"a known label's value past the longest a label may have", []packedAdd{{"campaign", strings.Repeat("x", 300), 1}, {"os", "Linux", 1}}},
		{"a known label's empty value", []packedAdd{{"campaign", "", 1}, {"os", "Linux", 1}}},
		{"steps of every size", []packedAdd{{"browser", "Edge", math.MaxInt64}, {"browser", "Edge", math.MinInt64}, {"os", "Linux", 0}, {"os", "iOS", -300}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			adds := make([]labelAdd, len(tt.adds))
			for i, a := range tt.adds {
				adds[i] = labelAdd{label: a.label, value: a.value, by: a.by}
			}
			if got := unpacked(t, packAdds(adds)); !slices.Equal(got, tt.adds) {
				t.Fatalf("read %v, wrote %v", got, tt.adds)
			}
		})
	}
}

// The codes save what each round appends to its slot: a page hit's usual
// adds take 3 bytes, not the 19 or so they took spelt out.
func TestPackedAddsOfPageHitsAreShort(t *testing.T) {
	t.Parallel()
	adds := []labelAdd{{label: "browser", value: "Chrome", by: 1}, {label: "country", value: "(unknown)", by: 1},
		{label: "device", value: "desktop", by: 1}, {label: "os", value: "Windows", by: 1}, {label: "referrer", value: "google.com", by: 1}}
	if n := len(packAdds(adds)); n != 3*len(adds) {
		t.Fatalf("%d adds packed into %d bytes, want %d", len(adds), n, 3*len(adds))
	}
}

// Rows packed before the codes, and slots that hold entries of both
// spellings (a slot appended to across an upgrade), read as written.
func TestPackedAddsReadRowsOfEitherSpelling(t *testing.T) {
	t.Parallel()
	old := []packedAdd{{"browser", "Chrome", 2}, {"referrer", "t.co", 1}, {"channel", "web", -4}}
	coded := []packedAdd{{"os", "Windows", 1}, {"referrer", "example.org", 3}}
	codedAdds := make([]labelAdd, len(coded))
	for i, a := range coded {
		codedAdds[i] = labelAdd{label: a.label, value: a.value, by: a.by}
	}
	if got := unpacked(t, spelt(old)); !slices.Equal(got, old) {
		t.Fatalf("a row spelt out read as %v, written %v", got, old)
	}
	// A row as b112df1 wrote it: browser=Chrome by 2, channel=web by -4.
	written := []byte("\x07browser\x06Chrome\x04\x07channel\x03web\x07")
	if got, want := unpacked(t, written), []packedAdd{{"browser", "Chrome", 2}, {"channel", "web", -4}}; !slices.Equal(got, want) {
		t.Fatalf("a row of b112df1 read as %v, written %v", got, want)
	}
	mixed := append(append(spelt(old), packAdds(codedAdds)...), spelt(old)...)
	if got, want := unpacked(t, mixed), slices.Concat(old, coded, old); !slices.Equal(got, want) {
		t.Fatalf("a row of both spellings read as %v, written %v", got, want)
	}
}

// A row that is not packed as packAdds packs is refused, never read as
// other labels: cut short anywhere, or beginning with a byte that begins
// no entry.
func TestPackedAddsRefuseBrokenRows(t *testing.T) {
	t.Parallel()
	first := []labelAdd{{label: "referrer", value: "news.example.com", by: 1}}
	whole := packAdds(append(first, labelAdd{label: "channel", value: "web", by: 300}))
	for n := 1; n < len(whole); n++ {
		if unpackAdds(whole[:n], func(string, string, int64) {}) == nil && n != len(packAdds(first)) {
			t.Errorf("the row cut to %d of %d bytes was read", n, len(whole))
		}
	}
	for _, b := range [][]byte{{0}, {0x80 + byte(len(packedLabels))}, {0xff}, {0x80, 0}, {0x80, 129 + byte(len(packedValues))}} {
		if err := unpackAdds(append(b, 2), func(string, string, int64) {}); err == nil {
			t.Errorf("the row %x was read", b)
		}
	}
}

// Every entry of the tables has a code of its own: no more entries than
// codes, none twice.
func TestPackedTablesFitTheirCodes(t *testing.T) {
	t.Parallel()
	if n := len(packedLabels); n > 0x100-packedLabelFirst {
		t.Errorf("%d labels for %d codes", n, 0x100-packedLabelFirst)
	}
	if n := len(packedValues); n > 0x100-packedValueFirst {
		t.Errorf("%d values for %d codes", n, 0x100-packedValueFirst)
	}
	if len(packedLabelCode) != len(packedLabels) || len(packedValueCode) != len(packedValues) {
		t.Errorf("a table names an entry twice")
	}
}
