package badge

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// palette is shields.io's named colours, so that ?color=orange looks the same
// here as on the badges people already know. The semantic aliases (success,
// critical, ...) map to the colours shields maps them to.
var palette = map[string]string{
	"brightgreen":   "#44cc11",
	"green":         "#97ca00",
	"yellowgreen":   "#a4a61d",
	"yellow":        "#dfb317",
	"orange":        "#fe7d37",
	"red":           "#e05d44",
	"blue":          "#007ec6",
	"lightgrey":     "#9f9f9f",
	"lightgray":     "#9f9f9f",
	"grey":          "#555555",
	"gray":          "#555555",
	"success":       "#44cc11",
	"important":     "#fe7d37",
	"critical":      "#e05d44",
	"informational": "#007ec6",
	"inactive":      "#9f9f9f",
}

// maxColorLen bounds what ParseColor reads: the longest colour it accepts,
// "hsla(360turn , 100% , 100% , 100%)" with generous spaces, is far shorter.
const maxColorLen = 64

// color is a parsed colour: what the SVG's fill gets, and its red, green
// and blue for choosing the text colour on it.
type color struct {
	fill    string // "#rrggbb", or "rgba(r,g,b,a)" when not opaque
	r, g, b uint8
}

// ParseColor accepts a colour as shields.io does and returns it as "#rrggbb"
// in lower case, or as "rgba(r,g,b,a)" when it is not opaque:
//
//   - a shields name: brightgreen, green, yellowgreen, yellow, orange, red,
//     blue, lightgrey, grey, and the aliases gray, lightgray, success,
//     important, critical, informational, inactive;
//   - 3 or 6 hex digits, "#" optional (it must be written %23 in a query
//     string); with the "#", also 4 or 8 digits whose last is the alpha;
//   - any CSS named colour (purple, rebeccapurple, ...); shields' names win
//     where both have one (green is shields' green);
//   - rgb()/rgba() with three integers or three percentages, separated by
//     commas or by spaces, and an optional alpha (0, 1, .5, 0.5 or 50%)
//     after a comma or a "/"; hsl()/hsla() with a hue (an integer, in deg,
//     rad, grad or turn), two percentages and the same optional alpha.
//
// Matching is case-insensitive. Anything else, including "", is an error.
// The answer is rebuilt from the parsed numbers, never copied from s, so a
// colour cannot carry markup into the SVG's attributes.
func ParseColor(s string) (string, error) {
	c, ok := parseColor(s)
	if !ok {
		return "", fmt.Errorf("badge: unknown colour %q: use a name such as brightgreen, blue or purple, hex such as #4c1 or 44cc11, or rgb(), rgba(), hsl() or hsla()", s)
	}
	return c.fill, nil
}

func parseColor(s string) (color, bool) {
	if len(s) > maxColorLen {
		return color{}, false
	}
	lower := strings.ToLower(s)
	if hex, ok := palette[lower]; ok {
		return hexColor(hex[1:]), true
	}
	if hex, ok := cssNames[lower]; ok {
		return hexColor(hex[1:]), true
	}
	if h, ok := strings.CutPrefix(lower, "#"); ok {
		if (len(h) == 3 || len(h) == 4 || len(h) == 6 || len(h) == 8) && isHex(h) {
			c := hexColor(h)
			if len(h) == 6 {
				c.fill = lower // already "#rrggbb": no copy
			}
			return c, true
		}
		return color{}, false
	}
	if (len(lower) == 3 || len(lower) == 6) && isHex(lower) {
		return hexColor(lower), true
	}
	return parseFunc(lower)
}

// hexColor makes a colour of 3, 4, 6 or 8 hex digits (checked by the
// caller); the fourth or the last two are the alpha.
func hexColor(h string) color {
	if len(h) <= 4 {
		long := make([]byte, 0, 8)
		for i := 0; i < len(h); i++ {
			long = append(long, h[i], h[i])
		}
		h = string(long)
	}
	c := color{r: hexByte(h[0:2]), g: hexByte(h[2:4]), b: hexByte(h[4:6])}
	if len(h) == 8 {
		return c.withAlpha(float64(hexByte(h[6:8])) / 255)
	}
	c.fill = "#" + h
	return c
}

// withAlpha sets c's fill from its red, green and blue and alpha a in [0, 1].
func (c color) withAlpha(a float64) color {
	if a >= 1 {
		c.fill = fmt.Sprintf("#%02x%02x%02x", c.r, c.g, c.b)
		return c
	}
	c.fill = fmt.Sprintf("rgba(%d,%d,%d,%s)", c.r, c.g, c.b, strconv.FormatFloat(math.Round(a*1000)/1000, 'f', -1, 64))
	return c
}

// parseFunc reads rgb(), rgba(), hsl() and hsla() as shields' colour
// library (css-color-converter) reads them: the same forms, with numbers
// written as digits only. s is in lower case.
func parseFunc(s string) (color, bool) {
	p := scanner{s: s}
	switch {
	case p.word("rgba(") || p.word("rgb("):
		return p.rgb()
	case p.word("hsla(") || p.word("hsl("):
		return p.hsl()
	}
	return color{}, false
}

// scanner reads a functional colour left to right.
type scanner struct {
	s string
	i int
}

func (p *scanner) word(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

// space skips ASCII white space and reports whether there was any.
func (p *scanner) space() bool {
	start := p.i
	for p.i < len(p.s) && strings.IndexByte(" \t\n\v\f\r", p.s[p.i]) >= 0 {
		p.i++
	}
	return p.i > start
}

// digits reads an unsigned integer, saturating at a value far above any
// component's range, which the caller then clamps.
func (p *scanner) digits() (int, bool) {
	start, n := p.i, 0
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		n = min(n*10+int(p.s[p.i]-'0'), 1<<20)
		p.i++
	}
	return n, p.i > start
}

// end reads the optional alpha after sep (a comma, or "/" in the
// space-separated form) and the closing parenthesis; it answers the alpha,
// 1 when there is none.
func (p *scanner) end(sep string) (float64, bool) {
	p.space()
	a := 1.0
	if p.word(sep) {
		p.space()
		var ok bool
		if a, ok = p.alpha(); !ok {
			return 0, false
		}
		p.space()
	}
	return a, p.word(")") && p.i == len(p.s)
}

// alpha reads 0, 1, an optional 0 then a dot and digits, or a percentage.
func (p *scanner) alpha() (float64, bool) {
	start := p.i
	n, whole := p.digits()
	if p.word("%") {
		return min(float64(n)/100, 1), whole
	}
	if p.word(".") {
		if whole && p.s[start:p.i-1] != "0" {
			return 0, false
		}
		if _, ok := p.digits(); !ok {
			return 0, false
		}
		a, err := strconv.ParseFloat(p.s[start:p.i], 64)
		return a, err == nil
	}
	return float64(n), whole && (p.s[start:p.i] == "0" || p.s[start:p.i] == "1")
}

// rgb reads "r, g, b[, a])" or "r g b[ / a])", each of r, g, b an integer
// (0 to 255) or, all three alike, a percentage.
func (p *scanner) rgb() (color, bool) {
	var v [3]int
	percent, spaced := false, false
	for k := range v {
		if k > 0 {
			hadSpace := p.space()
			switch {
			case p.word(","):
				if spaced {
					return color{}, false
				}
				p.space()
			case hadSpace && (k == 1 || spaced):
				spaced = true
			default:
				return color{}, false
			}
		} else {
			p.space()
		}
		n, ok := p.digits()
		if !ok {
			return color{}, false
		}
		pct := p.word("%")
		if k == 0 {
			percent = pct
		} else if pct != percent {
			return color{}, false
		}
		if percent {
			n = int(math.Round(float64(min(n, 100)) * 255 / 100))
		}
		v[k] = min(n, 255)
	}
	sep := ","
	if spaced {
		sep = "/"
	}
	a, ok := p.end(sep)
	if !ok {
		return color{}, false
	}
	return color{r: uint8(v[0]), g: uint8(v[1]), b: uint8(v[2])}.withAlpha(a), true
}

// hueUnits converts a hue's unit to degrees.
var hueUnits = []struct {
	name string
	deg  float64
}{{"deg", 1}, {"grad", 0.9}, {"rad", 180 / math.Pi}, {"turn", 360}}

// hsl reads "h[unit], s%, l%[, a])".
func (p *scanner) hsl() (color, bool) {
	p.space()
	n, ok := p.digits()
	if !ok {
		return color{}, false
	}
	h := float64(n)
	for _, u := range hueUnits {
		if p.word(u.name) {
			h *= u.deg
			break
		}
	}
	var sl [2]float64
	for k := range sl {
		p.space()
		if !p.word(",") {
			return color{}, false
		}
		p.space()
		n, ok := p.digits()
		if !ok || !p.word("%") {
			return color{}, false
		}
		sl[k] = float64(min(n, 100)) / 100
	}
	a, ok := p.end(",")
	if !ok {
		return color{}, false
	}
	r, g, b := hslToRGB(math.Mod(h, 360), sl[0], sl[1])
	return color{r: r, g: g, b: b}.withAlpha(a), true
}

// hslToRGB is CSS Color 4's conversion (section 7.1): hue in [0, 360),
// saturation and lightness in [0, 1].
func hslToRGB(h, s, l float64) (r, g, b uint8) {
	f := func(n float64) uint8 {
		k := math.Mod(n+h/30, 12)
		a := s * min(l, 1-l)
		return uint8(math.Round(255 * (l - a*max(-1, min(k-3, 9-k, 1)))))
	}
	return f(0), f(8), f(4)
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// textColors picks the text and shadow colours for a background, with
// shields' rule: white text on dark backgrounds, dark text on light ones, so
// that a label on ?color=fff stays readable. Like shields, it ignores alpha.
func textColors(bg color) (text, shadow string) {
	// ITU-R BT.601 luma in hundredths, rounded as shields rounds it
	// (toFixed(2)); shields' threshold is 0.69.
	luma := (int(bg.r)*299 + int(bg.g)*587 + int(bg.b)*114 + 1275) / 2550
	if luma <= 69 {
		return "#fff", "#010101"
	}
	return "#333", "#ccc"
}

func hexByte(s string) uint8 {
	return hexDigit(s[0])<<4 | hexDigit(s[1])
}

func hexDigit(c byte) uint8 {
	if c >= 'a' {
		return c - 'a' + 10
	}
	return c - '0'
}
