package app

import (
	"bytes"
	"unicode/utf8"

	"github.com/countersvc/countersvc/breakdowns"
)

// scanLabels reads a labels object ({"channel": "web"}) straight from
// raw, a JSON value the body's parse already checked, into buf, sorted by
// key: what a labelled increment sends, without the map, the strings and
// the second pass of encoding/json. It takes only an object of at most
// len(buf) plainly spelt strings (no escapes, valid UTF-8) of distinct
// keys; for anything else ok is false, and the caller reads raw as
// encoding/json does, which also says what is wrong with it. The labels
// point into raw.
func scanLabels(raw []byte, buf []breakdowns.Label) (labels []breakdowns.Label, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return nil, false
	}
	labels = buf[:0]
	if i = skipSpace(raw, i+1); i < len(raw) && raw[i] == '}' {
		return labels, true
	}
	for {
		k, next, ok := plainString(raw, i)
		if !ok {
			return nil, false
		}
		if i = skipSpace(raw, next); i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		v, next, ok := plainString(raw, skipSpace(raw, i+1))
		if !ok || len(labels) == len(buf) {
			return nil, false
		}
		labels = append(labels, breakdowns.Label{Key: k, Value: v})
		if i = skipSpace(raw, next); i < len(raw) && raw[i] == ',' {
			i = skipSpace(raw, i+1)
			continue
		}
		if i < len(raw) && raw[i] == '}' {
			break
		}
		return nil, false
	}
	// Insertion sort: a few labels. A key equal to one before it (which
	// encoding/json resolves as the last one winning) is left to it.
	for a := 1; a < len(labels); a++ {
		for b := a; b > 0; b-- {
			c := bytes.Compare(labels[b-1].Key, labels[b].Key)
			if c == 0 {
				return nil, false
			}
			if c < 0 {
				break
			}
			labels[b-1], labels[b] = labels[b], labels[b-1]
		}
	}
	return labels, true
}

// plainString reads the JSON string at raw[i] when it holds no escape and
// only valid UTF-8 (encoding/json would replace invalid bytes), and
// returns its bytes and the index after it.
func plainString(raw []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(raw) || raw[i] != '"' {
		return nil, 0, false
	}
	ascii := true
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			s = raw[i+1 : j]
			return s, j + 1, ascii || utf8.Valid(s)
		case c == '\\':
			return nil, 0, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, 0, false
}

// skipSpace is the index of the first byte of raw from i on that is not
// JSON's white space.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}
