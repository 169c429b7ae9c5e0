package live_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/live"
)

// table is a Reader over an in-memory table, for the hub's own rules (the
// real store's ReadLive is tested in storage/, the whole in app/).
type table struct {
	mu    sync.Mutex
	rows  map[string]live.Update
	reads int
}

func (t *table) set(name string, value, version int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rows[name] = live.Update{Name: name, Value: value, Version: version}
}

func (t *table) ReadLive(_ context.Context, q live.Query) ([]live.Update, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.reads++
	var out []live.Update
	for _, n := range q.Names {
		if u, ok := t.rows[n]; ok {
			out = append(out, u)
		}
	}
	for _, p := range q.Prefixes {
		for n, u := range t.rows {
			if strings.HasPrefix(n, p) && u.Version > q.Since {
				out = append(out, u)
			}
		}
	}
	return out, nil
}

func newHub(t *testing.T, o live.Options) (*live.Hub, *table) {
	t.Helper()
	tb := &table{rows: map[string]live.Update{}}
	o.Reader = tb
	if o.CheckEvery == 0 {
		o.CheckEvery = time.Hour // only what a test marks is read
	}
	h := live.New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return h, tb
}

// take waits for the stream's next batch.
func take(t *testing.T, s *live.Stream) []live.Update {
	t.Helper()
	select {
	case <-s.Ready():
		return s.Take()
	case <-time.After(2 * time.Second):
		t.Fatal("nothing to send")
	}
	return nil
}

func quiet(t *testing.T, s *live.Stream) {
	t.Helper()
	select {
	case <-s.Ready():
		if got := s.Take(); len(got) > 0 {
			t.Fatalf("sent %+v, want nothing", got)
		}
	case <-time.After(100 * time.Millisecond):
	}
}

func committed(h *live.Hub, names ...string) {
	var cs []counters.Change
	for _, n := range names {
		cs = append(cs, counters.Change{Name: n})
	}
	h.Committed(context.Background(), cs)
}

// However often a counter changes before its stream is written, the
// stream holds one slot for it, with the newest state; a state older than
// one sent is never sent.
func TestAStreamKeepsTheNewestStateOfEachCounterOnly(t *testing.T) {
	h, tb := newHub(t, live.Options{})
	tb.set("a", 1, 10)
	s, err := h.Counter(context.Background(), live.Request{Name: "a", Addr: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := take(t, s); len(got) != 1 || got[0].Value != 1 {
		t.Fatalf("first %+v", got)
	}
	for v := int64(2); v <= 50; v++ {
		tb.set("a", v, 10+v)
		committed(h, "a")
	}
	// The hub reads changed counters back at most every Interval, so a
	// read may land among the changes; each take still holds one event
	// for the counter, newer than the last, until the newest arrives.
	var last int64 = 1
	for takes := 0; last != 50; takes++ {
		got := take(t, s)
		if len(got) != 1 || got[0].Value <= last {
			t.Fatalf("after value %d the stream held %+v, want one newer event of a", last, got)
		}
		if takes == 5 {
			t.Fatalf("49 changes took more than 5 events to reach 50 (last %d): the slot did not conflate", last)
		}
		last = got[0].Value
	}
	tb.set("a", 7, 5) // an older version, as a late read would bring
	committed(h, "a")
	quiet(t, s)
}

// Last-Event-ID: the stream's current version or an older one decides
// whether the current value is sent; an unknown id gets it.
func TestLastEventIDDecidesWhetherTheCurrentValueIsSent(t *testing.T) {
	h, tb := newHub(t, live.Options{})
	tb.set("a", 5, 100)
	for _, tc := range []struct {
		id   string
		send bool
	}{
		{"", true}, {"99", true}, {"100", false}, {"101", true}, {"x", true}, {"-1", true},
	} {
		s, err := h.Counter(context.Background(), live.Request{Name: "a", LastEventID: tc.id})
		if err != nil {
			t.Fatal(err)
		}
		if tc.send {
			if got := take(t, s); len(got) != 1 || got[0].Value != 5 {
				t.Errorf("id %q: %+v", tc.id, got)
			}
		} else {
			quiet(t, s)
		}
		s.Close()
	}
}

// lateRelay is a table whose first read of a counter by name comes after
// the hub has offered that counter's state to the streams: a change
// relayed late, between a stream's registration and its read.
type lateRelay struct {
	*table
	hub     *live.Hub
	relayed atomic.Bool
}

func (l *lateRelay) ReadLive(ctx context.Context, q live.Query) ([]live.Update, error) {
	if len(q.Names) == 1 && q.Names[0] == "a" && l.relayed.CompareAndSwap(false, true) {
		reads := l.count()
		committed(l.hub, "a")
		for l.count() == reads { // the hub reads "a" back (this method, again) and offers it
			time.Sleep(time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return l.table.ReadLive(ctx, q)
}

func (t *table) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.reads
}

// A client that resumes with the current version's id gets nothing, also
// when the hub offered that version to its stream before the stream read
// the counter (it did, under load, and the browser showed a value twice).
func TestAResumedStreamIsNotSentAStateRelayedBeforeItsRead(t *testing.T) {
	relay := &lateRelay{table: &table{rows: map[string]live.Update{}}}
	relay.set("a", 2, 200)
	h := live.New(live.Options{Reader: relay, CheckEvery: time.Hour})
	relay.hub = h
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	s, err := h.Counter(context.Background(), live.Request{Name: "a", LastEventID: "200"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	quiet(t, s)
	relay.set("a", 3, 300)
	committed(h, "a")
	if got := take(t, s); len(got) != 1 || got[0].Value != 3 {
		t.Fatalf("after the resume the stream sent %+v, want value 3 alone", got)
	}
}

// A deleted counter sends a deletion; created again, its states are new
// whatever their versions.
func TestADeletionIsSentAndACounterCreatedAgainStreamsAgain(t *testing.T) {
	h, tb := newHub(t, live.Options{})
	tb.set("a", 5, 100)
	s, _ := h.Counter(context.Background(), live.Request{Name: "a"})
	defer s.Close()
	take(t, s)
	tb.mu.Lock()
	delete(tb.rows, "a")
	tb.mu.Unlock()
	committed(h, "a")
	if got := take(t, s); len(got) != 1 || !got[0].Deleted {
		t.Fatalf("after the deletion %+v", got)
	}
	tb.set("a", 1, 50) // a clock behind the deleted row's
	committed(h, "a")
	if got := take(t, s); len(got) != 1 || got[0].Deleted || got[0].Value != 1 {
		t.Fatalf("after the new creation %+v", got)
	}
}

// Past a cap a stream is refused rate_limited; a closed one makes room.
func TestStreamsPastACapAreRefused(t *testing.T) {
	h, tb := newHub(t, live.Options{MaxPerAddr: 2, MaxStreams: 3})
	tb.set("a", 1, 1)
	open := func(addr string) (*live.Stream, error) {
		return h.Counter(context.Background(), live.Request{Name: "a", Addr: addr})
	}
	a1, _ := open("a")
	open("a")
	if _, err := open("a"); counters.ErrorCode(err) != counters.ERATELIMITED {
		t.Errorf("third of one address: %v", err)
	}
	open("b")
	if _, err := open("c"); counters.ErrorCode(err) != counters.ERATELIMITED {
		t.Errorf("fourth in all: %v", err)
	}
	a1.Close()
	a1.Close() // twice frees one place
	if _, err := open("c"); err != nil {
		t.Errorf("after a close: %v", err)
	}
	if _, err := open("c"); counters.ErrorCode(err) != counters.ERATELIMITED {
		t.Errorf("a double close freed two places: %v", err)
	}
}

// With no stream open, a commit reads nothing; a prefix stream hears of
// the counters under its prefix only, and only of changes after it opened.
func TestOnlyWatchedCountersAreRead(t *testing.T) {
	h, tb := newHub(t, live.Options{})
	tb.set("shop/a", 1, 1)
	committed(h, "shop/a", "other")
	time.Sleep(50 * time.Millisecond)
	tb.mu.Lock()
	reads := tb.reads
	tb.mu.Unlock()
	if reads != 0 {
		t.Fatalf("%d reads with no stream open", reads)
	}
	s, err := h.Prefix(context.Background(), live.Request{Prefix: "shop/"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	quiet(t, s) // shop/a changed before the stream opened
	tb.set("shop/a", 2, time.Now().UnixMicro()+1)
	tb.set("other", 9, time.Now().UnixMicro()+1)
	committed(h, "shop/a", "other")
	got := take(t, s)
	if len(got) != 1 || got[0].Name != "shop/a" || got[0].Value != 2 {
		t.Fatalf("%+v", got)
	}
}

// The bounded check finds a change nobody was told of.
func TestTheCheckFindsChangesNobodyHeardOf(t *testing.T) {
	h, tb := newHub(t, live.Options{CheckEvery: 50 * time.Millisecond})
	tb.set("a", 1, 1)
	s, _ := h.Counter(context.Background(), live.Request{Name: "a"})
	defer s.Close()
	take(t, s)
	tb.set("a", 2, 2) // no Committed
	if got := take(t, s); len(got) != 1 || got[0].Value != 2 {
		t.Fatalf("%+v", got)
	}
}

// Close ends every stream.
func TestCloseEndsEveryStream(t *testing.T) {
	h, tb := newHub(t, live.Options{})
	tb.set("a", 1, 1)
	s, _ := h.Counter(context.Background(), live.Request{Name: "a"})
	h.Close()
	select {
	case <-s.Done():
	case <-time.After(time.Second):
		t.Fatal("the stream did not end")
	}
	if _, err := h.Counter(context.Background(), live.Request{Name: "a"}); counters.ErrorCode(err) != counters.EUNAVAILABLE {
		t.Errorf("a stream opened after Close: %v", err)
	}
}
