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
	"unicode/utf8"
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
	Style      string // one of Styles; "" or unknown: "flat"
}

// Styles are shields.io's badge styles that Render draws.
var Styles = []string{"flat", "flat-square", "plastic", "for-the-badge"}

// look is what a style changes, after shields' templates.
type look struct {
	height         int
	rx             int    // corner radius; 0: square
	gradient       string // stops of the light overlay; "": none
	textY, shadowY string
	scale          float64 // font size over fontSize
	padding        int     // left and right of each text
	upper          bool    // text in capitals
	textAttrs      string  // further attributes of the text group
	spacing        float64 // letter spacing in pixels
}

var looks = map[string]look{
	"flat": {height: 20, rx: 3, textY: "14", shadowY: "15", scale: 1, padding: padding,
		gradient: `<stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/>`},
	"flat-square": {height: 20, textY: "14", shadowY: "15", scale: 1, padding: padding},
	"plastic": {height: 18, rx: 4, textY: "13", shadowY: "14", scale: 1, padding: padding,
		gradient: `<stop offset="0" stop-color="#fff" stop-opacity=".7"/><stop offset=".1" stop-color="#aaa" stop-opacity=".1"/><stop offset=".9" stop-color="#000" stop-opacity=".3"/><stop offset="1" stop-color="#000" stop-opacity=".5"/>`},
	"for-the-badge": {height: 28, textY: "17.5", scale: 10.0 / fontSize * 1.1, padding: 12, upper: true, spacing: 1.25,
		textAttrs: ` font-weight="bold" letter-spacing="1.25"`},
}

// ValidStyle reports whether Render knows style; "" is the default.
func ValidStyle(style string) bool {
	_, ok := looks[style]
	return ok || style == ""
}

// Render returns the badge as a complete SVG document. It never fails: text
// that XML cannot carry (invalid UTF-8, control characters) is drawn as
// U+FFFD, and a bad colour falls back to the default. It is safe for
// concurrent use.
func Render(o Options) []byte {
	lk, ok := looks[o.Style]
	if !ok {
		lk = looks["flat"]
	}
	label, value := sanitize(o.Label), sanitize(o.Value)
	if lk.upper {
		label, value = strings.ToUpper(label), strings.ToUpper(value)
	}
	labelBg := colorOr(o.LabelColor, DefaultLabelColor)
	valueBg := colorOr(o.Color, DefaultColor)

	width := func(s string) float64 {
		return textWidth(s)*lk.scale + lk.spacing*float64(utf8.RuneCountInString(s))
	}
	labelText, valueText := width(label), width(value)
	labelBox := 0
	if label != "" {
		labelBox = lk.boxWidth(labelText)
	}
	valueBox := lk.boxWidth(valueText)
	total := labelBox + valueBox
	h := strconv.Itoa(lk.height)

	escLabel, escValue := escape(label), escape(value)
	title := escValue
	if label != "" {
		title = escLabel + ": " + escValue
	}

	var b bytes.Buffer
	b.Grow(1024 + 2*len(escLabel) + 2*len(escValue))
	b.WriteString(`<svg xmlns="http://www.w3.org/2000/svg" width="`)
	b.WriteString(strconv.Itoa(total))
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
		b.WriteString(strconv.Itoa(total))
		b.WriteString(`" height="` + h + `" rx="` + strconv.Itoa(lk.rx) + `" fill="#fff"/></clipPath><g clip-path="url(#r)">`)
	} else {
		b.WriteString(`<g shape-rendering="crispEdges">`)
	}
	if labelBox > 0 {
		rect(&b, 0, labelBox, h, labelBg)
	}
	rect(&b, labelBox, valueBox, h, valueBg)
	if lk.gradient != "" {
		b.WriteString(`<rect width="`)
		b.WriteString(strconv.Itoa(total))
		b.WriteString(`" height="` + h + `" fill="url(#s)"/>`)
	}
	b.WriteString(`</g>`)
	b.WriteString(`<g text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" text-rendering="geometricPrecision" font-size="` + num(fontSize*lk.scale/scaleOf(lk)) + `"` + lk.textAttrs + `>`)
	if labelBox > 0 {
		text(&b, lk, float64(labelBox)/2, labelText, escLabel, labelBg)
	}
	text(&b, lk, float64(labelBox)+float64(valueBox)/2, valueText, escValue, valueBg)
	b.WriteString(`</g></svg>`)
	return b.Bytes()
}

// boxWidth is the width of one part: the text rounded up to a whole odd
// number of pixels (so the centred text starts on a half pixel, as shields
// does for crisper edges) plus padding on both sides.
func (lk look) boxWidth(textW float64) int {
	w := int(math.Ceil(textW))
	if w%2 == 0 {
		w++
	}
	return w + 2*lk.padding
}

// scaleOf undoes the widening by which the bold text of a style is
// measured with the regular font: the font size itself is not widened.
func scaleOf(lk look) float64 {
	if lk.upper {
		return 1.1
	}
	return 1
}

func rect(b *bytes.Buffer, x, w int, h, fill string) {
	b.WriteString(`<rect`)
	if x > 0 {
		b.WriteString(` x="`)
		b.WriteString(strconv.Itoa(x))
		b.WriteString(`"`)
	}
	b.WriteString(` width="`)
	b.WriteString(strconv.Itoa(w))
	b.WriteString(`" height="` + h + `" fill="`)
	b.WriteString(fill)
	b.WriteString(`"/>`)
}

// text writes the 1px-lower shadow and then the text itself, centred on x.
func text(b *bytes.Buffer, lk look, x, width float64, esc, bg string) {
	fg, shadow := textColors(bg)
	// textLength is omitted for empty text: a zero length is an error in
	// some renderers.
	attrs := ` x="` + num(x) + `"`
	if width > 0 {
		attrs += ` textLength="` + num(math.Round(width*10)/10) + `"`
	}
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
