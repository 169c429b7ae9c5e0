package live_test

// Hubs of several processes over an in-memory Transport: who publishes
// what, and who reads after a notice. cache/ proves the Redis Transport,
// app/ and internal/clienttest the whole over HTTP.

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/live"
)

// bus is an in-memory Transport shared by the processes of a test: each
// gets an end. What one shares stays until it shares again (the tests run
// well within a ttl).
type bus struct {
	mu        sync.Mutex
	listeners map[int]live.Listener
	watches   map[int]live.Watch
	published [][]string
	// Redis failing a call, as under load past its deadline: shares that
	// fail all, publishes that fail this many first.
	failShares    bool
	failPublishes int
}

type end struct {
	b  *bus
	id int
}

func (e end) Publish(_ context.Context, names []string) error {
	e.b.mu.Lock()
	if e.b.failPublishes > 0 {
		e.b.failPublishes--
		e.b.mu.Unlock()
		return errors.New("redis: deadline exceeded")
	}
	e.b.published = append(e.b.published, names)
	ls := e.b.all()
	e.b.mu.Unlock()
	for _, l := range ls {
		l.Changed(names) // to every process, the publisher's included
	}
	return nil
}

func (e end) Subscribe(ctx context.Context, l live.Listener) {
	e.b.mu.Lock()
	e.b.listeners[e.id] = l
	e.b.mu.Unlock()
	l.Missed()
	<-ctx.Done()
	e.b.mu.Lock()
	delete(e.b.listeners, e.id)
	e.b.mu.Unlock()
}

func (e end) Share(_ context.Context, w live.Watch, _ time.Duration) error {
	e.b.mu.Lock()
	if e.b.failShares {
		e.b.mu.Unlock()
		return errors.New("redis: deadline exceeded")
	}
	e.b.watches[e.id] = w
	ls := e.b.all()
	e.b.mu.Unlock()
	for _, l := range ls {
		l.Watching()
	}
	return nil
}

func (e end) Watched(context.Context) (live.Watch, error) {
	e.b.mu.Lock()
	defer e.b.mu.Unlock()
	var all live.Watch
	for _, w := range e.b.watches {
		all.Names = append(all.Names, w.Names...)
		all.Prefixes = append(all.Prefixes, w.Prefixes...)
	}
	return all, nil
}

// all is the listeners; b.mu held.
func (b *bus) all() []live.Listener {
	out := make([]live.Listener, 0, len(b.listeners))
	for _, l := range b.listeners {
		out = append(out, l)
	}
	return out
}

// processes starts n hubs on one table (the database they share) and one
// bus. Their checks run once an hour: only notices make them read.
func processes(t *testing.T, n int) ([]*live.Hub, *table, *bus) {
	t.Helper()
	tb := &table{rows: map[string]live.Update{}}
	b := &bus{listeners: map[int]live.Listener{}, watches: map[int]live.Watch{}}
	var hubs []*live.Hub
	for i := range n {
		h := live.New(live.Options{Reader: tb, Transport: end{b, i}, CheckEvery: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { h.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done })
		hubs = append(hubs, h)
	}
	return hubs, tb, b
}

// waitFor waits up to 10 s for cond, which the hubs' goroutines make true.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
	}
}

// A change committed in one process reaches a stream of another through
// the transport, for a counter and for a prefix; a process publishes only
// what some process watches, and stops wanting a counter once nobody does.
func TestAChangeInOneProcessReachesAStreamInAnother(t *testing.T) {
	t.Parallel() // it waits for a renewal of the watches, about 2 s
	hubs, tb, b := processes(t, 2)
	writer, reader := hubs[0], hubs[1]
	ctx := context.Background()
	tb.set("a", 1, 1)
	tests := []struct {
		name    string
		open    func() (*live.Stream, error)
		changed string
	}{
		{"a counter's stream", func() (*live.Stream, error) { return reader.Counter(ctx, live.Request{Name: "a"}) }, "a"},
		{"a prefix's stream", func() (*live.Stream, error) { return reader.Prefix(ctx, live.Request{Prefix: "shop/"}) }, "shop/b"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tt.open()
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if tt.changed == "a" {
				take(t, s) // its current value
			}
			waitFor(t, "the writer learns that "+tt.changed+" is watched", func() bool { return writer.Wants(tt.changed) })
			if writer.Wants("elsewhere") {
				t.Fatal("the writer wants a counter nobody watches")
			}
			tb.set(tt.changed, int64(10+i), time.Now().UnixMicro()+1)
			committed(writer, tt.changed, "elsewhere")
			got := take(t, s)
			if len(got) != 1 || got[0].Name != tt.changed || got[0].Value != int64(10+i) {
				t.Fatalf("the reader's stream got %+v, want %s = %d", got, tt.changed, 10+i)
			}
			b.mu.Lock()
			for _, names := range b.published {
				for _, n := range names {
					if n == "elsewhere" {
						t.Errorf("published %q, which nobody watches", n)
					}
				}
			}
			b.mu.Unlock()
		})
	}
	// Both streams are closed: the reader shares an empty watch at its
	// next renewal, and the writer stops publishing for them.
	waitFor(t, "the writer forgets the watches of closed streams", func() bool {
		return !writer.Wants("a") && !writer.Wants("shop/b")
	})
	if reader.Open() != 0 {
		t.Fatalf("%d streams open, want 0", reader.Open())
	}
}

// The deletion of a counter under a prefix that a stream of another
// process watches reaches that stream although the writer does not know of
// the watch (the reader's announcement failed, or has not arrived yet),
// and although the writer's first notice fails: no check would ever find
// it, since the stream never read the counter.
func TestADeletionReachesAPrefixStreamInAnotherProcessWhateverTheWriterKnows(t *testing.T) {
	for _, tt := range []struct {
		name          string
		failShares    bool
		failPublishes int
	}{
		{"the reader's announcement failed", true, 0},
		{"and the writer's first two notices too", true, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hubs, _, b := processes(t, 2)
			writer, reader := hubs[0], hubs[1]
			waitFor(t, "both processes listen", func() bool { b.mu.Lock(); defer b.mu.Unlock(); return len(b.listeners) == 2 })
			b.mu.Lock()
			b.failShares, b.failPublishes = tt.failShares, tt.failPublishes
			b.mu.Unlock()
			s, err := reader.Prefix(context.Background(), live.Request{Prefix: "shop/"})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if writer.Wants("shop/a") {
				t.Fatal("the writer knows of the watch: the test proves nothing")
			}
			// shop/a was never in tb: deleted before the stream read it.
			writer.Committed(context.Background(), []counters.Change{{Name: "shop/a", Deleted: true}})
			if got := take(t, s); len(got) != 1 || got[0].Name != "shop/a" || !got[0].Deleted {
				t.Fatalf("the reader's stream got %+v, want the deletion of shop/a", got)
			}
		})
	}
}
