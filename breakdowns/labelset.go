package breakdowns

import (
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/countersvc/countersvc/counters"
)

// Labels say what an increment was made of: {"channel": "web", "region":
// "EU"}. Each label's value is counted with the step, in the same
// transaction and the same UTC day as its history, so that a breakdown of
// a counter's (or a prefix's) count by one label adds up to its history.
// The write path carries them as one counters.Extra (Of), without
// knowing them. Page hits carry labels the service sets
// (referrer, country, browser, os, device, source, medium, campaign);
// other increments carry those their clients send.
type Labels map[string]string

// Limits of Labels.
const (
	MaxLabels        = 8
	MaxLabelKeyLen   = 32
	MaxLabelValueLen = 128
)

// The values a breakdown shows for steps that a label's stored values do
// not hold: LabelOther for steps whose value came when the counter
// already had its bound of values for that label and day, LabelNone for
// steps without the label (computed at read time, never stored).
const (
	LabelOther = "(other)"
	LabelNone  = "(none)"
)

// DefaultLabelValues is how many distinct values of one label a counter
// keeps per UTC day by default; the steps of any further value count as
// LabelOther.
const DefaultLabelValues = 100

// Validate returns EINVALID unless there are at most MaxLabels labels, each
// key 1 to MaxLabelKeyLen characters of a-z, 0-9 and _, each value 1 to
// MaxLabelValueLen bytes of printable UTF-8. The message names the first
// bad label in key order.
func (l Labels) Validate() error {
	if len(l) > MaxLabels {
		return counters.Errorf(counters.EINVALID, "An increment carries at most %d labels, not %d.", MaxLabels, len(l))
	}
	for _, k := range l.Keys() {
		if err := validateLabel(k, l[k]); err != nil {
			return err
		}
	}
	return nil
}

// validateLabel is Validate's check of one label, key and value.
func validateLabel(k, v string) error {
	if err := ValidateLabelKey(k); err != nil {
		return err
	}
	switch {
	case v == "" || len(v) > MaxLabelValueLen:
		return counters.Errorf(counters.EINVALID, "The value of label %q must be 1 to %d bytes long, not %d.", k, MaxLabelValueLen, len(v))
	case !utf8.ValidString(v):
		return counters.Errorf(counters.EINVALID, "The value of label %q must be valid UTF-8.", k)
	}
	for _, r := range v {
		if !unicode.IsPrint(r) {
			return counters.Errorf(counters.EINVALID, "The value of label %q must be printable: no control or invisible characters.", k)
		}
	}
	return nil
}

// ValidateLabelKey returns EINVALID unless key is 1 to MaxLabelKeyLen
// characters of a-z, 0-9 and _.
func ValidateLabelKey(key string) error {
	if key == "" || len(key) > MaxLabelKeyLen {
		return counters.Errorf(counters.EINVALID, "A label's key must be 1 to %d characters of a-z, 0-9 and _.", MaxLabelKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return counters.Errorf(counters.EINVALID, "A label's key must be 1 to %d characters of a-z, 0-9 and _; %.40q is not.", MaxLabelKeyLen, key)
		}
	}
	return nil
}

// Keys returns the labels' keys in byte order.
func (l Labels) Keys() []string {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
