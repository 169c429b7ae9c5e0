package storage

import (
	"encoding/binary"

	"github.com/countersvc/countersvc/counters"
)

// How a label slot and a pending row hold their adds (packAdds): one
// entry per add, entries of any rows simply concatenated (a slot is
// appended to, a pending row takes a slot's bytes or a later write's),
// each entry read on its own. An entry is its label, its value and its
// step (a varint). The first byte says how the label is spelt:
//
//   - below 0x80 (a label has 1 to 32 bytes): the label's length, its
//     bytes, then the value's length (a uvarint) and its bytes. Every
//     entry was so spelt before the codes below (2026-11-28), so rows
//     written then read as they were; it stays the spelling of a label
//     not in packedLabels, and of a value empty or longer than 128 bytes.
//   - 0x80 + i: packedLabels[i]; the value follows as one byte, v:
//     1 to 128, the value's length, its bytes after it; 129 + j,
//     packedValues[j].
//
// A round of page hits appends to its counter's slot some fifteen adds,
// of five labels and mostly of a few dozen values: spelt out, 19 bytes an
// add on average, and each round rewrites the whole slot in its upsert;
// coded, 3 bytes an add of a known value (labels and values that page
// hits carry), 3 plus the value's length otherwise. Both tables only
// grow: a row on disk names their entries by index, so an entry is never
// removed, reordered or changed.
var (
	packedLabels = []string{"referrer", "country", "browser", "os", "device", "source", "medium", "campaign"}
	packedValues = []string{
		// hits' "nothing known" values and breakdowns' LabelOther
		"(direct)", "(internal)", "(unknown)", "(other)",
		// browsers, systems and devices as hits' labeller spells them
		"Chrome", "Safari", "Edge", "Firefox", "Opera", "Opera Mini", "Samsung Browser", "Android Browser", "IE",
		"Vivaldi", "Amazon Silk", "Falkon", "Nintendo Browser", "Yandex Browser", "Huawei Browser",
		"Windows", "macOS", "iOS", "Android", "Linux", "ChromeOS", "FreeBSD", "OpenBSD",
		"desktop", "mobile", "tablet", "tv", "bot",
		// the most common referring hosts
		"google.com", "bing.com", "duckduckgo.com", "yahoo.com", "baidu.com", "yandex.ru", "t.co", "facebook.com",
		"instagram.com", "linkedin.com", "reddit.com", "youtube.com", "news.ycombinator.com", "github.com",
	}
	packedLabelCode = codes(packedLabels)
	packedValueCode = codes(packedValues)
)

// Bytes that begin an entry or a coded value (see packedLabels).
const (
	packedLabelFirst = 0x80 // + the label's index in packedLabels
	packedValueFirst = 129  // + the value's index in packedValues
	packedValueLong  = 128  // the longest value spelt with a one-byte length
)

// codes maps each of names to its index.
func codes(names []string) map[string]byte {
	m := make(map[string]byte, len(names))
	for i, n := range names {
		m[n] = byte(i)
	}
	return m
}

// packAdds packs adds, all of one counter and day, into a pending row's
// adds, as the comment on packedLabels says. Rows so packed may be
// concatenated.
func packAdds(adds []labelAdd) []byte {
	n := 0
	for _, a := range adds {
		n += 2 + len(a.label) + len(a.value) + binary.MaxVarintLen16 + binary.MaxVarintLen64
	}
	b := make([]byte, 0, n)
	for _, a := range adds {
		// A value longer than a label may have, or empty (neither reaches
		// here), is spelt out: its length would not fit the one byte
		// between the codes (1 to packedValueLong).
		if l, ok := packedLabelCode[a.label]; ok && len(a.value) >= 1 && len(a.value) <= packedValueLong {
			b = append(b, packedLabelFirst+l)
			if v, ok := packedValueCode[a.value]; ok {
				b = append(b, packedValueFirst+v)
			} else {
				b = append(b, byte(len(a.value)))
				b = append(b, a.value...)
			}
		} else {
			b = appendSpelt(b, a.label, a.value)
		}
		b = binary.AppendVarint(b, a.by)
	}
	return b
}

// appendSpelt appends label and value spelt out, each its length (a
// uvarint) and its bytes: how every entry began before the codes.
func appendSpelt(b []byte, label, value string) []byte {
	b = binary.AppendUvarint(b, uint64(len(label)))
	b = append(b, label...)
	b = binary.AppendUvarint(b, uint64(len(value)))
	return append(b, value...)
}

// unpackAdds calls fn with each add of a pending row, in the order packed.
// The strings are those of the tables, or copies of b's bytes.
func unpackAdds(b []byte, fn func(label, value string, by int64)) error {
	return unpackAddsInterned(b, nil, fn)
}

// unpackAddsInterned is unpackAdds copying each spelt string once into
// seen (when not nil) and handing back that copy every time after: a
// settling pass reads the same few values in every row of a hot page.
func unpackAddsInterned(b []byte, seen map[string]string, fn func(label, value string, by int64)) error {
	spelt := func(n uint64, k int) (string, bool) {
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		raw := b[k : k+int(n)]
		b = b[k+int(n):]
		if s, ok := seen[string(raw)]; ok {
			return s, true
		}
		s := string(raw)
		if seen != nil {
			seen[s] = s
		}
		return s, true
	}
	bad := func() error {
		return counters.Errorf(counters.EINTERNAL, "storage: a pending label row is not packed as packAdds packs")
	}
	for len(b) > 0 {
		var label, value string
		ok := false
		switch first := b[0]; {
		case first >= packedLabelFirst && int(first-packedLabelFirst) < len(packedLabels):
			label, b = packedLabels[first-packedLabelFirst], b[1:]
			if len(b) == 0 {
				return bad()
			}
			switch v := b[0]; {
			case v >= packedValueFirst && int(v-packedValueFirst) < len(packedValues):
				value, b, ok = packedValues[v-packedValueFirst], b[1:], true
			case v >= 1 && v <= packedValueLong:
				value, ok = spelt(uint64(v), 1)
			}
		case first < packedLabelFirst:
			if label, ok = spelt(binary.Uvarint(b)); ok {
				value, ok = spelt(binary.Uvarint(b))
			}
		}
		if !ok {
			return bad()
		}
		by, k := binary.Varint(b)
		if k <= 0 {
			return bad()
		}
		b = b[k:]
		fn(label, value, by)
	}
	return nil
}
