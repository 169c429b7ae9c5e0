package badge

import (
	"fmt"
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

// ParseColor accepts a shields.io colour name or a hex colour ("#abc", "abc",
// "#aabbcc", "aabbcc"; the "#" is optional because it must be escaped as %23
// in a query string) and returns it as "#rrggbb" in lower case. Matching is
// case-insensitive. Anything else, including "", is an error.
//
// Only strings that pass ParseColor ever reach the SVG, so a colour cannot
// carry markup into an attribute.
func ParseColor(s string) (string, error) {
	lower := strings.ToLower(s)
	if hex, ok := palette[lower]; ok {
		return hex, nil
	}
	h := strings.TrimPrefix(lower, "#")
	if (len(h) == 3 || len(h) == 6) && isHex(h) {
		if len(h) == 3 {
			h = string([]byte{h[0], h[0], h[1], h[1], h[2], h[2]})
		}
		return "#" + h, nil
	}
	return "", fmt.Errorf("badge: unknown colour %q: use a name such as brightgreen or blue, or hex such as #4c1 or 44cc11", s)
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
// that a label on ?color=fff stays readable. bg must be "#rrggbb".
func textColors(bg string) (text, shadow string) {
	r, g, b := hexByte(bg[1:3]), hexByte(bg[3:5]), hexByte(bg[5:7])
	// ITU-R BT.601 luma; shields' threshold is 0.69 of full brightness.
	if r*299+g*587+b*114 <= 690*255 {
		return "#fff", "#010101"
	}
	return "#333", "#ccc"
}

func hexByte(s string) int {
	return hexDigit(s[0])<<4 | hexDigit(s[1])
}

func hexDigit(c byte) int {
	if c >= 'a' {
		return int(c-'a') + 10
	}
	return int(c - '0')
}
