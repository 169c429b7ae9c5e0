package badge

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"sort"
)

// Text is measured as shields.io measures it: with anafanafo's tables of
// Verdana's advance widths (LICENSE-anafanafo.txt), which badge-maker uses
// for every badge, so that a badge here is as wide as shields' badge of the
// same text. gen_widths.go converts the tables; widths.bin.gz says how
// they are stored.
//
//go:generate go run gen_widths.go
//go:embed widths.bin.gz
var widthsData []byte

// font is one of anafanafo's tables.
type font struct {
	ascii  [128]float64 // widths of ASCII, the text of almost every badge
	ranges []span       // every range, sorted, for the rest
	em     float64      // the width of a code point the table lacks: that of "m", as anafanafo guesses
}

// span is a range of code points of one width, in hundredths of a pixel.
type span struct {
	first, last rune
	width       uint16
}

// The fonts of shields' styles: Verdana 11px for flat, flat-square and
// plastic; for-the-badge measures its label in Verdana 10px and its message
// in bold Verdana 10px.
var verdana11, verdana10, verdana10Bold = loadFonts()

func loadFonts() (*font, *font, *font) {
	zr, err := gzip.NewReader(bytes.NewReader(widthsData))
	if err != nil {
		// The tables are compiled into the binary; failing to read them is a
		// build defect, not a runtime condition.
		panic("badge: read the embedded width tables: " + err.Error())
	}
	r := bufio.NewReader(zr)
	fonts := make([]*font, 3)
	for i := range fonts {
		if fonts[i], err = readFont(r); err != nil {
			panic("badge: read the embedded width tables: " + err.Error())
		}
	}
	return fonts[0], fonts[1], fonts[2]
}

func readFont(r *bufio.Reader) (*font, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	f := &font{ranges: make([]span, n)}
	next := uint64(0)
	for i := range f.ranges {
		var v [3]uint64
		for k := range v {
			if v[k], err = binary.ReadUvarint(r); err != nil {
				return nil, err
			}
		}
		first := next + v[0]
		f.ranges[i] = span{first: rune(first), last: rune(first + v[1]), width: uint16(v[2])}
		next = first + v[1] + 1
	}
	f.em = f.advance('m')
	for c := range f.ascii {
		f.ascii[c] = f.advance(rune(c))
	}
	return f, nil
}

// advance is r's width, as anafanafo's widthOfCharCode with guessing on:
// control characters are 0 wide, and a code point outside every range is
// as wide as "m".
func (f *font) advance(r rune) float64 {
	if r <= 31 || r == 127 {
		return 0
	}
	i := sort.Search(len(f.ranges), func(i int) bool { return f.ranges[i].last >= r })
	if i == len(f.ranges) || f.ranges[i].first > r {
		return f.em
	}
	// A whole number of hundredths divided by 100 is the float64 nearest
	// the two-decimal width, as JavaScript reads it from anafanafo's JSON.
	return float64(f.ranges[i].width) / 100
}

// width is the width of s in pixels. It adds in float64 from left to right,
// as anafanafo does, so that it floors to the same whole pixel.
func (f *font) width(s string) float64 {
	w := 0.0
	for _, r := range s {
		if r < 128 {
			w += f.ascii[r]
		} else {
			w += f.advance(r)
		}
	}
	return w
}
