package counters

import (
	"context"
	"slices"
	"unicode"
	"unicode/utf8"
)

// Labels say what an increment was made of: {"channel": "web", "region":
// "EU"}. Each label's value is counted with the step, in the same
// transaction and the same UTC day as its history, so that a breakdown of
// a counter's (or a prefix's) count by one label adds up to its history
// (package breakdowns reads them). Page hits carry labels the service sets
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
		return Errorf(EINVALID, "An increment carries at most %d labels, not %d.", MaxLabels, len(l))
	}
	for _, k := range l.Keys() {
		if err := ValidateLabelKey(k); err != nil {
			return err
		}
		v := l[k]
		switch {
		case v == "" || len(v) > MaxLabelValueLen:
			return Errorf(EINVALID, "The value of label %q must be 1 to %d bytes long, not %d.", k, MaxLabelValueLen, len(v))
		case !utf8.ValidString(v):
			return Errorf(EINVALID, "The value of label %q must be valid UTF-8.", k)
		}
		for _, r := range v {
			if !unicode.IsPrint(r) {
				return Errorf(EINVALID, "The value of label %q must be printable: no control or invisible characters.", k)
			}
		}
	}
	return nil
}

// ValidateLabelKey returns EINVALID unless key is 1 to MaxLabelKeyLen
// characters of a-z, 0-9 and _.
func ValidateLabelKey(key string) error {
	if key == "" || len(key) > MaxLabelKeyLen {
		return Errorf(EINVALID, "A label's key must be 1 to %d characters of a-z, 0-9 and _.", MaxLabelKeyLen)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return Errorf(EINVALID, "A label's key must be 1 to %d characters of a-z, 0-9 and _; %.40q is not.", MaxLabelKeyLen, key)
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

// Labelled is what a service of labelled increments offers: the counters
// Service does, and so does anything that wraps it for a consumer (page
// hits label theirs through it).
type Labelled interface {
	// IncrementLabelled is Increment with labels: each label's value is
	// counted with the step, in the same transaction. Nil or empty labels
	// make it Increment exactly. Returns what Increment returns, and
	// EINVALID for labels that break Labels.Validate (nothing changes).
	IncrementLabelled(ctx context.Context, name string, by int64, labels Labels) (int64, error)
}

func (s *service) IncrementLabelled(ctx context.Context, name string, by int64, labels Labels) (int64, error) {
	if err := ValidateName(name); err != nil {
		return 0, err
	}
	if err := labels.Validate(); err != nil {
		return 0, err
	}
	if len(labels) == 0 || !s.labels {
		return s.store.Increment(ctx, name, by)
	}
	// The store's one way to be told of labels is an Increment: a lone
	// one goes through the coalescer's queue like Increment (see
	// coalesce.Store.IncrementMany).
	values, err := s.store.IncrementMany(ctx, []Increment{{Name: name, By: by, Labels: labels}})
	if err != nil {
		return 0, err
	}
	return values[0], nil
}

func (s *service) IncrementLabelledOnce(ctx context.Context, key Idempotency, name string, by int64, labels Labels) (int64, bool, error) {
	if err := labels.Validate(); err != nil {
		return 0, false, err
	}
	if len(labels) == 0 || !s.labels {
		return s.IncrementOnce(ctx, key, name, by)
	}
	if err := s.checkOnce(key, name); err != nil {
		return 0, false, err
	}
	// A batch of one records its value as the increment would; the key's
	// fingerprint tells the two requests apart.
	values, replayed, err := s.once.BatchOnce(ctx, key, []Increment{{Name: name, By: by, Labels: labels}})
	if err != nil {
		return 0, false, err
	}
	return values[0], replayed, nil
}

// dropLabels returns items without their labels when the backend does not
// count them, copying rather than changing the caller's slice.
func (s *service) dropLabels(items []Increment) []Increment {
	if s.labels || !slices.ContainsFunc(items, func(it Increment) bool { return it.Labels != nil }) {
		return items
	}
	out := slices.Clone(items)
	for i := range out {
		out[i].Labels = nil
	}
	return out
}
