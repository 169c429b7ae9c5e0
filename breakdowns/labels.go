package breakdowns

import (
	"bytes"
	"encoding/json"
	"iter"
	"strings"

	"github.com/countersvc/countersvc/counters"
)

// Labelled is what a labelled step carries down the write path, its
// counters.Extra: its labels, ordered by key, in one comparable string, so
// that the coalescer sums a counter's steps of equal labels without
// knowing them and storage's labels tally reads them back (All). Build it
// with Of.
type Labelled struct{ packed string }

// sep ends each key and each value in Labelled: keys are a-z, 0-9 and _,
// and values printable (Labels.Validate), so neither holds it.
const sep = "\x00"

// Of is labels as a step's Extra, nil when there are none. labels must
// pass Labels.Validate.
func Of(labels Labels) counters.Extra {
	if len(labels) == 0 {
		return nil
	}
	var b strings.Builder
	for _, k := range labels.Keys() {
		b.WriteString(k)
		b.WriteString(sep)
		b.WriteString(labels[k])
		b.WriteString(sep)
	}
	return Labelled{b.String()}
}

// A Label is one label as its key's and its value's bytes, such as a
// request body holds them (OfSorted).
type Label struct{ Key, Value []byte }

// OfSorted is Of for labels given in key order, keys distinct (a request
// body's, whose bytes it copies): nil when there are none, and the
// EINVALID of Labels.Validate when they break its rules. It builds the
// step's Extra in one allocation, without a Labels map: the write path of
// a labelled increment.
func OfSorted(labels []Label) (counters.Extra, error) {
	if len(labels) > MaxLabels {
		return nil, counters.Errorf(counters.EINVALID, "An increment carries at most %d labels, not %d.", MaxLabels, len(labels))
	}
	if len(labels) == 0 {
		return nil, nil
	}
	n := 0
	for _, l := range labels {
		if bytes.Contains(l.Key, []byte(sep)) || bytes.Contains(l.Value, []byte(sep)) {
			// Not printable, and unreadable packed: Validate says why.
			m := Labels{}
			for _, l := range labels {
				m[string(l.Key)] = string(l.Value)
			}
			return nil, m.Validate()
		}
		n += len(l.Key) + len(l.Value) + 2*len(sep)
	}
	var b strings.Builder
	b.Grow(n)
	for _, l := range labels {
		b.Write(l.Key)
		b.WriteString(sep)
		b.Write(l.Value)
		b.WriteString(sep)
	}
	packed := Labelled{b.String()}
	// Checked as packed, in key order, so that the first bad label is the
	// one Validate names.
	for k, v := range packed.All() {
		if err := validateLabel(k, v); err != nil {
			return nil, err
		}
	}
	return packed, nil
}

// All yields each label and its value, in key order.
func (l Labelled) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		rest := l.packed
		for rest != "" {
			k, after, _ := strings.Cut(rest, sep)
			v, after, _ := strings.Cut(after, sep)
			if !yield(k, v) {
				return
			}
			rest = after
		}
	}
}

// Len is how many labels l holds.
func (l Labelled) Len() int { return strings.Count(l.packed, sep) / 2 }

// Labels are l's labels as a map.
func (l Labelled) Labels() Labels {
	out := Labels{}
	for k, v := range l.All() {
		out[k] = v
	}
	return out
}

// MarshalJSON writes l as the labels' object, as the idempotency
// fingerprints of labelled writes always spelled it.
func (l Labelled) MarshalJSON() ([]byte, error) { return json.Marshal(l.Labels()) }
