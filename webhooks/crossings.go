package webhooks

import (
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// Crossing is one threshold a change crossed, in one direction.
type Crossing struct {
	Threshold int64
	Direction Direction // Up or Down
}

// Crossings returns the thresholds that a change of a watched counter from
// prev to value crosses, in the order of travel: previous < T <= value
// going up, previous > T >= value going down, for the hook's thresholds
// and the multiples of its Every, each threshold once, at most
// MaxCrossings. A change that goes nowhere crosses nothing.
func (h *Hook) Crossings(prev, value int64) []Crossing {
	var dir Direction
	switch {
	case value > prev && h.Direction != Down:
		dir = Up
	case value < prev && h.Direction != Up:
		dir = Down
	default:
		return nil
	}
	var ts []int64
	for _, t := range h.Thresholds {
		if dir == Up && prev < t && t <= value || dir == Down && prev > t && t >= value {
			ts = append(ts, t)
		}
	}
	if h.Every > 0 {
		ts = append(ts, multiples(h.Every, prev, value, MaxCrossings)...)
	}
	if len(ts) == 0 {
		return nil
	}
	slices.Sort(ts)
	ts = slices.Compact(ts)
	if dir == Down {
		slices.Reverse(ts)
	}
	if len(ts) > MaxCrossings {
		ts = ts[:MaxCrossings]
	}
	out := make([]Crossing, len(ts))
	for i, t := range ts {
		out[i] = Crossing{Threshold: t, Direction: dir}
	}
	return out
}

// multiples returns up to limit multiples of n crossed on the way from prev
// to value, in the order of travel; int64 arithmetic that cannot overflow.
func multiples(n, prev, value int64, limit int) []int64 {
	var out []int64
	if value > prev {
		// The first multiple above prev.
		t, ok := nextMultipleAbove(n, prev)
		for ok && t <= value && len(out) < limit {
			out = append(out, t)
			if t > math.MaxInt64-n {
				break
			}
			t += n
		}
		return out
	}
	t, ok := nextMultipleBelow(n, prev)
	for ok && t >= value && len(out) < limit {
		out = append(out, t)
		if t < math.MinInt64+n {
			break
		}
		t -= n
	}
	return out
}

// nextMultipleAbove is the least multiple of n greater than x.
func nextMultipleAbove(n, x int64) (int64, bool) {
	m := x / n * n // toward zero: m lies between 0 and x, so it fits
	if m > x {     // x < 0: m is the least multiple >= x
		return m, true
	}
	if m > math.MaxInt64-n {
		return 0, false
	}
	return m + n, true
}

// nextMultipleBelow is the greatest multiple of n less than x.
func nextMultipleBelow(n, x int64) (int64, bool) {
	m := x / n * n
	if m < x { // x > 0: m is the greatest multiple <= x
		return m, true
	}
	if m < math.MinInt64+n {
		return 0, false
	}
	return m - n, true
}

// EventType is the type of every event of a threshold hook.
const EventType = "counter.threshold"

// Event is the body of a call, as it is stored and sent: every attempt
// sends the same bytes.
type Event struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      EventData `json:"data"`
}

// EventData says what crossed what.
type EventData struct {
	Name      string    `json:"name"`
	Threshold int64     `json:"threshold"`
	Direction Direction `json:"direction"`
	Previous  int64     `json:"previous"`
	Value     int64     `json:"value"`
}

// Body is the event of a crossing by change c, as the bytes to store and
// sign.
func Body(c counters.Change, x Crossing) []byte {
	b, _ := json.Marshal(Event{Type: EventType, Timestamp: c.At.UTC(), Data: EventData{
		Name: c.Name, Threshold: x.Threshold, Direction: x.Direction, Previous: c.Prev, Value: c.Value,
	}}) // strings, ints and a time always marshal
	return b
}

// Quiet returns the range [lo, hi] around v within which changes of a
// watched counter cross nothing of the hook: a change from a value in it to
// a value in it calls nothing. lo <= v <= hi. Going up crosses T with
// previous < T <= value, so up the range runs from the last point at or
// below v to just before the next above it; going down crosses T with
// previous > T >= value, so down it runs from just after the last point
// below v to the next at or above it. Both is where the two agree: a
// counter at a threshold may then only stay there.
func (h *Hook) Quiet(v int64) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	if h.Direction != Down {
		if p, ok := h.atOrBelow(v); ok {
			lo = max(lo, p)
		}
		if p, ok := h.atOrAbove(v); ok && v < math.MaxInt64 {
			if p == v {
				p, ok = h.atOrAbove(v + 1)
			}
			if ok {
				hi = min(hi, p-1)
			}
		}
	}
	if h.Direction != Up {
		if p, ok := h.atOrBelow(v); ok && v > math.MinInt64 {
			if p == v {
				p, ok = h.atOrBelow(v - 1)
			}
			if ok {
				lo = max(lo, p+1)
			}
		}
		if p, ok := h.atOrAbove(v); ok {
			hi = min(hi, p)
		}
	}
	return lo, hi
}

// atOrBelow is the greatest of the hook's points (thresholds and multiples
// of Every) at or below v.
func (h *Hook) atOrBelow(v int64) (p int64, ok bool) {
	i, found := slices.BinarySearch(h.Thresholds, v)
	if found {
		return v, true
	}
	if i > 0 {
		p, ok = h.Thresholds[i-1], true
	}
	if h.Every > 0 {
		m, mok := v, v%h.Every == 0
		if !mok {
			m, mok = nextMultipleBelow(h.Every, v)
		}
		if mok && (!ok || m > p) {
			p, ok = m, true
		}
	}
	return p, ok
}

// atOrAbove is the least of the hook's points at or above v.
func (h *Hook) atOrAbove(v int64) (p int64, ok bool) {
	i, found := slices.BinarySearch(h.Thresholds, v)
	if found {
		return v, true
	}
	if i < len(h.Thresholds) {
		p, ok = h.Thresholds[i], true
	}
	if h.Every > 0 {
		m, mok := v, v%h.Every == 0
		if !mok {
			m, mok = nextMultipleAbove(h.Every, v)
		}
		if mok && (!ok || m < p) {
			p, ok = m, true
		}
	}
	return p, ok
}
