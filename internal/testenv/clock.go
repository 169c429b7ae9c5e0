package testenv

import (
	"sync/atomic"
	"time"
)

// Clock is a settable clock for the stores' injectable Now: tests put it at
// a period's edge and move it across.
type Clock struct{ ns atomic.Int64 }

// NewClock returns a clock that shows t until Set.
func NewClock(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now is the clock's time; safe for concurrent use.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }
