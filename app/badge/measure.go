package badge

import (
	_ "embed"
	"sync"

	"golang.org/x/image/font"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// DejaVu Sans is embedded because its metrics are close to Verdana's (both
// descend from the same design brief), which is the first font the badge asks
// the browser for. Measuring a real font, rather than guessing a width per
// character, keeps "WWW" and "iii" from getting the same box. Licence:
// LICENSE-DejaVuSans.txt.
//
//go:embed DejaVuSans.ttf
var dejaVuSans []byte

// fontSize is the badge's font size in CSS pixels; at 72 DPI one point is one
// pixel, so the face's advances come out in pixels.
const fontSize = 11

var (
	// asciiAdvance holds the advance of every ASCII rune, computed once at
	// start-up: almost every label and value is ASCII, and the table can be
	// read by any number of goroutines without a lock.
	asciiAdvance [128]fixed.Int26_6

	// face measures the rare non-ASCII rune. An opentype face keeps a scratch
	// buffer and is not safe for concurrent use, hence the mutex.
	faceMu sync.Mutex
	face   font.Face
)

func init() {
	f, err := opentype.Parse(dejaVuSans)
	if err != nil {
		// The font is compiled into the binary; failing to parse it is a
		// build defect, not a runtime condition.
		panic("badge: parse embedded DejaVu Sans: " + err.Error())
	}
	face, err = opentype.NewFace(f, &opentype.FaceOptions{Size: fontSize, DPI: 72, Hinting: font.HintingNone})
	if err != nil {
		panic("badge: open embedded DejaVu Sans: " + err.Error())
	}
	for r := rune(0); r < 128; r++ {
		asciiAdvance[r] = glyphAdvance(r)
	}
}

// glyphAdvance asks the face for r's advance. A rune the font lacks (CJK,
// emoji) is counted as one em: browsers draw those with a fallback font whose
// glyphs are roughly square, and textLength squeezes the rest.
func glyphAdvance(r rune) fixed.Int26_6 {
	faceMu.Lock()
	adv, ok := face.GlyphAdvance(r)
	faceMu.Unlock()
	if !ok {
		return fixed.I(fontSize)
	}
	return adv
}

// textWidth returns the width of s in pixels at the badge's font size.
// Kerning is left out: the sfnt package reads only the legacy kern table, and
// the browser is told the exact length through textLength anyway.
func textWidth(s string) float64 {
	var w fixed.Int26_6
	for _, r := range s {
		if r >= 0 && r < 128 {
			w += asciiAdvance[r]
		} else {
			w += glyphAdvance(r)
		}
	}
	return float64(w) / 64
}
