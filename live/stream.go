package live

import (
	"slices"
	"sync"
)

// Stream is one client's stream. The hub offers it states; it keeps one
// slot per counter (the newest offered state), so its memory is bounded by
// the counters it watches however fast they change, and a slow client
// skips values instead of queueing them. Its writer (app/) waits on Ready,
// then Takes what the slots hold, at most once per Interval.
type Stream struct {
	hub          *Hub
	addr         string
	name, prefix string

	mu      sync.Mutex
	floor   int64             // states at or below it were sent before (Last-Event-ID) or predate a prefix stream
	pending map[string]Update // the slots
	sent    map[string]Update // the last state sent of each counter
	ready   chan struct{}
	closed  bool
}

func newStream(h *Hub, addr, name, prefix string, floor int64) *Stream {
	h.m.open.Inc()
	return &Stream{hub: h, addr: addr, name: name, prefix: prefix, floor: floor,
		pending: map[string]Update{}, sent: map[string]Update{}, ready: make(chan struct{}, 1)}
}

// Ready has a value when Take has something.
func (s *Stream) Ready() <-chan struct{} { return s.ready }

// Done is closed when the stream must end: the process is stopping.
func (s *Stream) Done() <-chan struct{} { return s.hub.done }

// setFloor replaces the floor. The hub may be offering states meanwhile,
// and may have offered some before it: those not above the floor go, as
// if they had come after it (a change relayed late, which the client's
// Last-Event-ID says it has had, must not be sent again). Nothing has been
// sent yet when the floor is set.
func (s *Stream) setFloor(floor int64) {
	s.mu.Lock()
	s.floor = floor
	for name, u := range s.pending {
		if !u.Deleted && u.Version <= floor {
			delete(s.pending, name)
		}
	}
	s.mu.Unlock()
}

// offer puts u in its counter's slot if it is newer than what the slot
// holds and than what was sent: a deletion is newer than any state, and
// after one any state is newer (a counter created again).
func (s *Stream) offer(u Update) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || !newer(u, s.pending, s.sent, s.floor) {
		return
	}
	s.pending[u.Name] = u
	signal(s.ready)
}

func newer(u Update, pending, sent map[string]Update, floor int64) bool {
	last, ok := pending[u.Name]
	if !ok {
		last, ok = sent[u.Name]
	}
	switch {
	case !ok:
		return u.Version > floor || (u.Version == 0 && floor == 0 && !u.Deleted)
	case last.Deleted:
		return !u.Deleted
	case u.Deleted:
		return true
	}
	return u.Version > last.Version
}

// Take empties the slots: the states to send, oldest first.
func (s *Stream) Take() []Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	out := make([]Update, 0, len(s.pending))
	for n, u := range s.pending {
		out = append(out, u)
		s.sent[n] = u
	}
	clear(s.pending)
	slices.SortFunc(out, func(a, b Update) int { return compareInt(a.Version, b.Version) })
	s.hub.m.events.Add(float64(len(out)))
	return out
}

// Close ends the stream and frees its place under the caps; it may be
// called more than once.
func (s *Stream) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	clear(s.pending)
	s.mu.Unlock()
	s.hub.m.open.Dec()
	s.hub.remove(s)
}
