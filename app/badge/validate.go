package badge

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxLabelRunes bounds a label so that a visitor-supplied ?label= cannot make
// the service render (and browsers lay out) an arbitrarily wide badge.
const MaxLabelRunes = 64

// ValidateLabel reports whether s may be used as a badge label: valid UTF-8,
// at most MaxLabelRunes runes, and no control characters (C0, DEL, C1). The
// empty label is valid; Render then draws only the value part.
//
// Render copes with any string, so this is for handlers that want to answer a
// bad ?label= with 400 rather than draw a mangled badge.
func ValidateLabel(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("badge: label is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(s); n > MaxLabelRunes {
		return fmt.Errorf("badge: label has %d characters, at most %d are allowed", n, MaxLabelRunes)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("badge: label contains control character %U", r)
		}
	}
	return nil
}
