package badge

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"sort"
	"sync"
	"unicode"
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

// fontSet is the fonts of shields' styles: Verdana 11px for flat,
// flat-square and plastic; for-the-badge measures its label in Verdana 10px
// and its value in bold Verdana 10px.
type fontSet struct {
	verdana11, verdana10, verdana10Bold *font
}

// fonts reads the tables on the first badge, not at start-up: about 400 KB
// and a few milliseconds that a process drawing no badge need not spend.
var fonts = sync.OnceValue(func() fontSet {
	set, err := readFonts()
	if err != nil {
		// The tables are compiled into the binary; failing to read them is a
		// build defect, not a runtime condition.
		panic("badge: read the embedded width tables: " + err.Error())
	}
	return set
})

func readFonts() (fontSet, error) {
	zr, err := gzip.NewReader(bytes.NewReader(widthsData))
	if err != nil {
		return fontSet{}, err
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return fontSet{}, err
	}
	var set fontSet
	for _, f := range []**font{&set.verdana11, &set.verdana10, &set.verdana10Bold} {
		if *f, data, err = readFont(data); err != nil {
			return fontSet{}, err
		}
	}
	if len(data) != 0 {
		return fontSet{}, errors.New("trailing bytes")
	}
	return set, nil
}

// readFont reads one table from the front of data and returns the rest.
func readFont(data []byte) (*font, []byte, error) {
	bad := false
	uvarint := func() uint64 {
		v, n := binary.Uvarint(data)
		if n <= 0 {
			bad = true
			return 0
		}
		data = data[n:]
		return v
	}
	count := uvarint()
	if bad || count > uint64(len(data)) {
		return nil, nil, errors.New("truncated table")
	}
	f := &font{ranges: make([]span, count)}
	next := uint64(0)
	for i := range f.ranges {
		first := next + uvarint()
		last := first + uvarint()
		width := uvarint()
		if bad || last > unicode.MaxRune || width > math.MaxUint16 {
			return nil, nil, errors.New("truncated or malformed table")
		}
		f.ranges[i] = span{first: rune(first), last: rune(last), width: uint16(width)}
		next = last + 1
	}
	f.em = f.advance('m')
	for c := range f.ascii {
		f.ascii[c] = f.advance(rune(c))
	}
	return f, data, nil
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
