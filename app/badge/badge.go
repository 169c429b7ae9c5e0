// Package badge draws the small two-part SVG badges ("hits | 1,234") served by
// the page-hit endpoints, in the look of shields.io's styles.
//
// Text is measured with shields' own tables of Verdana's widths and laid out
// with shields' arithmetic, so a badge is as wide as shields' badge of the
// same text; the width is also given to the browser as textLength so the
// text still fits when it renders with another font.
package badge

import (
	"bytes"
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
)

// Default colours, used when Options leaves a colour empty or gives one that
// ParseColor rejects.
const (
	DefaultLabelColor = "#555555" // shields' grey
	DefaultColor      = "#44cc11" // shields' brightgreen
	ErrorColor        = "#e05d44" // shields' red, of badges that report an error
)

var defaultLabelColor, defaultColor = hexColor(DefaultLabelColor[1:]), hexColor(DefaultColor[1:])

// Options describes one badge. Label and Value are plain text: Render escapes
// them, so they may come straight from a query string. Color and LabelColor
// are anything ParseColor accepts; empty or invalid means the default. A
// handler that wants to reject bad input with 400 should call ValidateLabel
// and ParseColor itself first.
type Options struct {
	Label      string // left, grey part; "": the value alone (shields keeps an empty box for a LabelColor, but in for-the-badge)
	Value      string // right, coloured part, usually from FormatValue
	Color      string // value background; default DefaultColor
	LabelColor string // label background; default DefaultLabelColor
	Style      string // one of Styles; "" or unknown: "flat"
}

// Styles are shields.io's badge styles that Render draws.
var Styles = []string{"flat", "flat-square", "plastic", "for-the-badge"}

// look is what a style changes, after badge-maker's renderers.
type look struct {
	height         int
	rx             int    // corner radius; 0: square
	gradient       string // stops of the light overlay; "": none
	textY, shadowY string // shadowY "": no shadow
	fontSize       string
	forTheBadge    bool // capitals, wider margins, letter spacing, a bold value
}

var looks = map[string]look{
	"flat": {height: 20, rx: 3, textY: "14", shadowY: "15", fontSize: "11",
		gradient: `<stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/>`},
	"flat-square": {height: 20, textY: "14", fontSize: "11"},
	"plastic": {height: 18, rx: 4, textY: "13", shadowY: "14", fontSize: "11",
		gradient: `<stop offset="0" stop-color="#fff" stop-opacity=".7"/><stop offset=".1" stop-color="#aaa" stop-opacity=".1"/><stop offset=".9" stop-color="#000" stop-opacity=".3"/><stop offset="1" stop-color="#000" stop-opacity=".5"/>`},
	"for-the-badge": {height: 28, textY: "17.5", fontSize: "10", forTheBadge: true},
}

// ValidStyle reports whether Render knows style; "" is the default.
func ValidStyle(style string) bool {
	_, ok := looks[style]
	return ok || style == ""
}

// layout is where a badge's parts go, in pixels.
type layout struct {
	left, right      float64 // widths of the label's and the value's boxes; left 0: no label box
	labelX, valueX   float64 // centres of the texts
	labelLen, valLen float64 // the texts' textLength
}

// Render returns the badge as a complete SVG document. It never fails: text
// that XML cannot carry (invalid UTF-8, control characters) is drawn as
// U+FFFD, and a bad colour falls back to the default. Like shields, it
// trims white space around the label and the value. It is safe for
// concurrent use.
func Render(o Options) []byte {
	lk, ok := looks[o.Style]
	if !ok {
		lk = looks["flat"]
	}
	label, value := sanitize(trim(o.Label)), sanitize(trim(o.Value))
	if lk.forTheBadge {
		label, value = strings.ToUpper(label), strings.ToUpper(value)
	}
	labelBg, labelGiven := parseColor(o.LabelColor)
	if !labelGiven {
		labelBg = defaultLabelColor
	}
	valueBg, ok := parseColor(o.Color)
	if !ok {
		valueBg = defaultColor
	}
	var l layout
	if lk.forTheBadge {
		l = forTheBadge(fonts(), label, value)
	} else {
		l = flat(fonts().verdana11, label, value, labelGiven)
	}
	total := num(l.left + l.right)
	h := strconv.Itoa(lk.height)

	escLabel, escValue := escape(label), escape(value)
	title := escValue
	if label != "" {
		title = escLabel + ": " + escValue
	}

	var b bytes.Buffer
	b.Grow(1024 + 2*len(escLabel) + 2*len(escValue))
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="`)
	b.WriteString(total)
	b.WriteString(`" height="` + h + `" role="img" aria-label="`)
	b.WriteString(title)
	b.WriteString(`"><title>`)
	b.WriteString(title)
	b.WriteString(`</title>`)
	// The ids are fixed: the badge is served as its own image/svg+xml
	// document, so they cannot clash with another badge's.
	if lk.gradient != "" {
		b.WriteString(`<linearGradient id="s" x2="0" y2="100%">` + lk.gradient + `</linearGradient>`)
	}
	if lk.rx > 0 {
		b.WriteString(`<clipPath id="r"><rect width="`)
		b.WriteString(total)
		b.WriteString(`" height="` + h + `" rx="` + strconv.Itoa(lk.rx) + `" fill="#fff"/></clipPath><g clip-path="url(#r)">`)
	} else {
		b.WriteString(`<g shape-rendering="crispEdges">`)
	}
	if l.left > 0 {
		rect(&b, 0, l.left, h, labelBg.fill)
	}
	rect(&b, l.left, l.right, h, valueBg.fill)
	if lk.gradient != "" {
		b.WriteString(`<rect width="`)
		b.WriteString(total)
		b.WriteString(`" height="` + h + `" fill="url(#s)"/>`)
	}
	b.WriteString(`</g>`)
	b.WriteString(`<g text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="` + lk.fontSize + `">`)
	if label != "" {
		text(&b, lk, l.labelX, l.labelLen, escLabel, labelBg, "")
	}
	if value != "" {
		bold := ""
		if lk.forTheBadge {
			bold = ` font-weight="bold"`
		}
		text(&b, lk, l.valueX, l.valLen, escValue, valueBg, bold)
	}
	b.WriteString(`</g></svg>`)
	return b.Bytes()
}

// flat lays out the flat, flat-square and plastic styles as badge-maker's
// Badge class does: each text's width floored to a whole pixel and rounded
// up to an odd one (so the centred text starts on a half pixel, for crisper
// edges), 5 pixels either side. A given label colour keeps an (empty) label
// box, as in shields.
func flat(verdana11 *font, label, value string, labelColorGiven bool) layout {
	const padding = 5
	var l layout
	if label != "" {
		l.labelLen = oddFloor(verdana11.width(label))
	}
	hasLabel := label != "" || labelColorGiven
	if hasLabel {
		l.left = l.labelLen + 2*padding
	}
	l.valLen = oddFloor(verdana11.width(value))
	l.right = l.valLen + 2*padding
	// shields' margins: the label's text one pixel right of its box's
	// centre, the value's one pixel left of its own when there is a label
	// box before it.
	l.labelX = 1 + padding + l.labelLen/2
	margin := l.left
	if hasLabel && value != "" {
		margin--
	}
	l.valueX = margin + padding + l.valLen/2
	return l
}

// forTheBadge lays out shields' for-the-badge style: capitals measured in
// Verdana 10px (the value in bold), floored, plus 1.25 pixels of letter
// spacing per UTF-16 code unit as shields counts them, 12 pixels either side.
func forTheBadge(fs fontSet, label, value string) layout {
	const margin, spacing = 12, 1.25
	var l layout
	if label != "" {
		l.labelLen = math.Floor(fs.verdana10.width(label)) + spacing*float64(utf16Len(label))
		l.left = l.labelLen + 2*margin
	}
	if value != "" {
		l.valLen = math.Floor(fs.verdana10Bold.width(value)) + spacing*float64(utf16Len(value))
	}
	l.right = l.valLen + 2*margin
	l.labelX = margin + l.labelLen/2
	l.valueX = l.left + margin + l.valLen/2
	return l
}

// oddFloor is shields' preferredWidthOf: w floored, then rounded up to odd.
func oddFloor(w float64) float64 {
	f := math.Floor(w)
	if math.Mod(f, 2) == 0 {
		f++
	}
	return f
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

func rect(b *bytes.Buffer, x, w float64, h, fill string) {
	b.WriteString(`<rect`)
	if x > 0 {
		b.WriteString(` x="`)
		b.WriteString(num(x))
		b.WriteString(`"`)
	}
	b.WriteString(` width="`)
	b.WriteString(num(w))
	b.WriteString(`" height="` + h + `" fill="`)
	b.WriteString(fill)
	b.WriteString(`"/>`)
}

// text writes the 1px-lower shadow, if the style has one, and then the text
// itself, centred on x and length pixels wide.
func text(b *bytes.Buffer, lk look, x, length float64, esc string, bg color, attrs string) {
	fg, shadow := textColors(bg)
	attrs = ` x="` + num(x) + `" textLength="` + num(length) + `"` + attrs
	if lk.shadowY != "" {
		b.WriteString(`<text aria-hidden="true"` + attrs + ` y="` + lk.shadowY + `" fill="` + shadow + `" fill-opacity=".3">`)
		b.WriteString(esc)
		b.WriteString(`</text>`)
	}
	b.WriteString(`<text` + attrs + ` y="` + lk.textY + `" fill="` + fg + `">`)
	b.WriteString(esc)
	b.WriteString(`</text>`)
}

func num(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// trim removes the white space around s that JavaScript's String.trim
// removes, as shields trims a badge's label and message: Unicode's space
// separators, the byte order mark, and tab, line and page breaks.
func trim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool {
		switch r {
		case '\t', '\n', '\v', '\f', '\r', '\uFEFF', '\u2028', '\u2029':
			return true
		}
		return unicode.Is(unicode.Zs, r)
	})
}

// sanitize replaces what an XML document cannot carry, or a badge should not
// show, with U+FFFD: invalid UTF-8 (strings.Map already decodes it as
// U+FFFD), control characters, and the non-characters U+FFFE and U+FFFF. It
// runs before measuring, so the width fits the text that is drawn.
func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == 0xFFFE || r == 0xFFFF {
			return unicode.ReplacementChar
		}
		return r
	}, s)
}

// escape makes s safe both as element text and inside a double-quoted
// attribute: EscapeText escapes <, >, &, ' and ".
func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}
