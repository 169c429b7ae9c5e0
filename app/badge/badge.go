// Package badge draws the small two-part SVG badges ("hits | 1,234") served by
// the page-hit endpoints, in the look of shields.io's "flat" style.
//
// Text widths are measured with an embedded copy of DejaVu Sans, so the
// boxes fit the text; the measured width is also given to the browser as
// textLength so the text still fits when it renders with another font.
package badge

import (
	"bytes"
	"encoding/xml"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Default colours, used when Options leaves a colour empty or gives one that
// ParseColor rejects.
const (
	DefaultLabelColor = "#555555" // shields' grey
	DefaultColor      = "#44cc11" // shields' brightgreen
	ErrorColor        = "#e05d44" // shields' red, of badges that report an error
)

const (
	height = 20
	// padding is the space left and right of each text, as in shields.
	padding = 5
)

// Options describes one badge. Label and Value are plain text: Render escapes
// them, so they may come straight from a query string. Color and LabelColor
// are anything ParseColor accepts; empty or invalid means the default. A
// handler that wants to reject bad input with 400 should call ValidateLabel
// and ParseColor itself first.
type Options struct {
	Label      string // left, grey part; "" draws the value part alone
	Value      string // right, coloured part, usually from FormatValue
	Color      string // value background; default DefaultColor
	LabelColor string // label background; default DefaultLabelColor
}

// Render returns the badge as a complete SVG document. It never fails: text
// that XML cannot carry (invalid UTF-8, control characters) is drawn as
// U+FFFD, and a bad colour falls back to the default. It is safe for
// concurrent use.
func Render(o Options) []byte {
	label, value := sanitize(o.Label), sanitize(o.Value)
	labelBg := colorOr(o.LabelColor, DefaultLabelColor)
	valueBg := colorOr(o.Color, DefaultColor)

	labelText, valueText := textWidth(label), textWidth(value)
	labelBox := 0
	if label != "" {
		labelBox = boxWidth(labelText)
	}
	valueBox := boxWidth(valueText)
	total := labelBox + valueBox

	escLabel, escValue := escape(label), escape(value)
	title := escValue
	if label != "" {
		title = escLabel + ": " + escValue
	}

	var b bytes.Buffer
	b.Grow(1024 + 2*len(escLabel) + 2*len(escValue))
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="`)
	b.WriteString(strconv.Itoa(total))
	b.WriteString(`" height="20" role="img" aria-label="`)
	b.WriteString(title)
	b.WriteString(`"><title>`)
	b.WriteString(title)
	b.WriteString(`</title>`)
	// The ids are fixed: the badge is served as its own image/svg+xml
	// document, so they cannot clash with another badge's.
	b.WriteString(`<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>`)
	b.WriteString(`<clipPath id="r"><rect width="`)
	b.WriteString(strconv.Itoa(total))
	b.WriteString(`" height="20" rx="3" fill="#fff"/></clipPath><g clip-path="url(#r)">`)
	if labelBox > 0 {
		rect(&b, 0, labelBox, labelBg)
	}
	rect(&b, labelBox, valueBox, valueBg)
	b.WriteString(`<rect width="`)
	b.WriteString(strconv.Itoa(total))
	b.WriteString(`" height="20" fill="url(#s)"/></g>`)
	b.WriteString(`<g text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="11">`)
	if labelBox > 0 {
		text(&b, float64(labelBox)/2, labelText, escLabel, labelBg)
	}
	text(&b, float64(labelBox)+float64(valueBox)/2, valueText, escValue, valueBg)
	b.WriteString(`</g></svg>`)
	return b.Bytes()
}

// boxWidth is the width of one part: the text rounded up to a whole odd
// number of pixels (so the centred text starts on a half pixel, as shields
// does for crisper edges) plus padding on both sides.
func boxWidth(textW float64) int {
	w := int(math.Ceil(textW))
	if w%2 == 0 {
		w++
	}
	return w + 2*padding
}

func rect(b *bytes.Buffer, x, w int, fill string) {
	b.WriteString(`<rect`)
	if x > 0 {
		b.WriteString(` x="`)
		b.WriteString(strconv.Itoa(x))
		b.WriteString(`"`)
	}
	b.WriteString(` width="`)
	b.WriteString(strconv.Itoa(w))
	b.WriteString(`" height="20" fill="`)
	b.WriteString(fill)
	b.WriteString(`"/>`)
}

// text writes the 1px-lower shadow and then the text itself, centred on x.
func text(b *bytes.Buffer, x, width float64, esc, bg string) {
	fg, shadow := textColors(bg)
	// textLength is omitted for empty text: a zero length is an error in
	// some renderers.
	attrs := ` x="` + num(x) + `"`
	if width > 0 {
		attrs += ` textLength="` + num(math.Round(width*10)/10) + `"`
	}
	b.WriteString(`<text aria-hidden="true"` + attrs + ` y="15" fill="` + shadow + `" fill-opacity=".3">`)
	b.WriteString(esc)
	b.WriteString(`</text><text` + attrs + ` y="14" fill="` + fg + `">`)
	b.WriteString(esc)
	b.WriteString(`</text>`)
}

func num(f float64) string {
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func colorOr(s, def string) string {
	if c, err := ParseColor(s); err == nil {
		return c
	}
	return def
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
