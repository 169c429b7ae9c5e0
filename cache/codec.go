package cache

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// Entries are a compact binary encoding rather than JSON: a hit decodes one
// on every cached read, and the format is private to this package (the key
// prefix carries its version).

const (
	kindCounter  = 'c'
	kindNotFound = 'n' // the counter did not exist when it was read
	kindPage     = 'p'
)

const (
	hasMin = 1 << iota
	hasMax
)

var errCorrupt = errors.New("cache: undecodable entry")

// encodeCounter encodes c, or "not found" when c is nil. The name is not
// stored: it is the key.
func encodeCounter(c *counters.Counter) []byte {
	if c == nil {
		return []byte{kindNotFound}
	}
	return appendCounter([]byte{kindCounter}, c)
}

// decodeCounter returns the counter named name, or nil for "not found".
func decodeCounter(name string, b []byte) (*counters.Counter, error) {
	if len(b) == 1 && b[0] == kindNotFound {
		return nil, nil
	}
	if len(b) == 0 || b[0] != kindCounter {
		return nil, errCorrupt
	}
	d := decoder{b: b[1:]}
	c := d.counter(name)
	if d.err != nil || len(d.b) != 0 {
		return nil, errCorrupt
	}
	return c, nil
}

// encodePage encodes a page of a listing read from MySQL at the time at.
func encodePage(p *counters.Page, at time.Time) []byte {
	b := []byte{kindPage}
	b = binary.AppendVarint(b, at.UnixNano())
	b = binary.AppendUvarint(b, uint64(len(p.Counters)))
	for i := range p.Counters {
		b = appendString(b, p.Counters[i].Name)
		b = appendCounter(b, &p.Counters[i])
	}
	if p.NextAfter == nil {
		return append(b, 0)
	}
	return appendString(append(b, 1), *p.NextAfter)
}

func decodePage(b []byte) (*counters.Page, time.Time, error) {
	if len(b) == 0 || b[0] != kindPage {
		return nil, time.Time{}, errCorrupt
	}
	d := decoder{b: b[1:]}
	at := time.Unix(0, d.varint())
	n := d.uvarint()
	if d.err != nil || n > counters.MaxListLimit {
		return nil, time.Time{}, errCorrupt
	}
	p := &counters.Page{Counters: make([]counters.Counter, 0, n)}
	for i := uint64(0); i < n && d.err == nil; i++ {
		name := d.string()
		if c := d.counter(name); c != nil {
			p.Counters = append(p.Counters, *c)
		}
	}
	if d.byte() == 1 {
		next := d.string()
		p.NextAfter = &next
	}
	if d.err != nil || len(d.b) != 0 {
		return nil, time.Time{}, errCorrupt
	}
	return p, at, nil
}

func appendCounter(b []byte, c *counters.Counter) []byte {
	b = binary.AppendVarint(b, c.Value)
	var flags byte
	if c.Min != nil {
		flags |= hasMin
	}
	if c.Max != nil {
		flags |= hasMax
	}
	b = append(b, flags)
	if c.Min != nil {
		b = binary.AppendVarint(b, *c.Min)
	}
	if c.Max != nil {
		b = binary.AppendVarint(b, *c.Max)
	}
	b = binary.AppendVarint(b, c.CreatedAt.UnixNano())
	return binary.AppendVarint(b, c.UpdatedAt.UnixNano())
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decoder reads what the append functions wrote; the first error sticks.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) counter(name string) *counters.Counter {
	c := &counters.Counter{Name: name, Value: d.varint()}
	flags := d.byte()
	if flags&hasMin != 0 {
		v := d.varint()
		c.Min = &v
	}
	if flags&hasMax != 0 {
		v := d.varint()
		c.Max = &v
	}
	// MySQL hands out UTC times; decode to the same so that answers served
	// from the cache render exactly like answers served from MySQL.
	c.CreatedAt = time.Unix(0, d.varint()).UTC()
	c.UpdatedAt = time.Unix(0, d.varint()).UTC()
	if d.err != nil {
		return nil
	}
	return c
}

func (d *decoder) varint() int64   { return next(d, binary.Varint) }
func (d *decoder) uvarint() uint64 { return next(d, binary.Uvarint) }

// next reads one number with read, which answers n <= 0 on bad input.
func next[T int64 | uint64](d *decoder, read func([]byte) (T, int)) T {
	v, n := read(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) string() string {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
	d.b = nil
}
