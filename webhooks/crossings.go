package webhooks

import (
	"encoding/json"
	"math"
	"slices"
	"time"

	"countersvc/counters"
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
