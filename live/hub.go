package live

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/foundation/deadline"
)

// Defaults of Options.
const (
	DefaultCheckEvery = time.Second
	DefaultMaxPerAddr = 100
	DefaultMaxStreams = 20000
)

// Interval is the least time between two events of one counter on one
// stream (docs/live-updates.md allows at most about ten a second): a stream keeps one
// slot per counter and sends what the slot holds then, so a faster counter
// skips values. Four a second keep a dashboard moving and the latest value
// well within its second, and cost a third of ten: with 1,000 streams on a
// hot counter, increments ran at 0.79x the rate without streams at ten a
// second and 0.94x at four (scripts/bench -scenario live).
const Interval = 250 * time.Millisecond

// checkOverlap is how far back a check of the watched prefixes looks before
// the previous check began: a write stamps its version before its statement
// and may commit a little later, so a check that began after the stamp may
// have missed it. Seconds cover a statement's deadline; the versions keep
// the overlap from sending anything twice.
const checkOverlap = 5 * time.Second

// shareEvery is how often a process renews its watches in the Transport,
// and watchTTL how long an entry lives there: a process that died stops
// costing publishers anything within watchTTL.
const (
	shareEvery = 2 * time.Second
	watchTTL   = 10 * time.Second
)

// maxNamesPerQuery bounds one read's IN list (a prepared statement takes at
// most 65,535 placeholders).
const maxNamesPerQuery = 10000

// publishEvery is the least time between two notices of one process: the
// receivers read at most once per Interval anyway, and a hot counter would
// otherwise send a notice per commit.
const publishEvery = 50 * time.Millisecond

// Options configure a Hub. Zero values take the defaults.
type Options struct {
	Reader     Reader        // required
	Transport  Transport     // nil: a single process (no Redis)
	CheckEvery time.Duration // the bounded interval of the checks against MySQL
	MaxPerAddr int           // open streams per client address
	MaxStreams int           // open streams in all
	Timeout    time.Duration // deadline of each MySQL and Redis call (COUNTERS_MYSQL_TIMEOUT); default deadline.Default
	Registerer prometheus.Registerer
	Log        *slog.Logger
	Now        func() time.Time
}

func (o *Options) defaults() {
	if o.CheckEvery <= 0 {
		o.CheckEvery = DefaultCheckEvery
	}
	if o.MaxPerAddr <= 0 {
		o.MaxPerAddr = DefaultMaxPerAddr
	}
	if o.MaxStreams <= 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.Timeout <= 0 {
		o.Timeout = deadline.Default
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Hub is one process's live updates: its open streams, the state it last
// read of each watched counter, and the loop that reads them. It is a
// counters.Observer (register it with the store) and opens streams.
type Hub struct {
	o Options
	m *metrics

	// mu guards the streams' index. Writers of counters take it shared
	// (Committed), so a hot counter's commits never queue behind each
	// other or behind the handing of a state to its streams.
	mu       sync.RWMutex
	byName   map[string]map[*Stream]struct{}
	byPrefix map[string]map[*Stream]struct{}
	perAddr  map[string]int
	open     int
	closed   bool
	done     chan struct{} // closed by Close: every stream ends

	latestMu sync.Mutex        // after mu when both are held
	latest   map[string]Update // the last state read of each watched counter

	marks  sync.Mutex
	dirty  map[string]struct{} // names to read
	toSend map[string]struct{} // names to publish

	watching atomic.Bool              // any stream open here
	anywhere atomic.Pointer[watchSet] // watched by any process, this one included
	lastOK   atomic.Int64             // version at which the last full check began
	failing  bool                     // the last read failed (readLoop's alone)
	signals  struct{ dirty, publish, missed, share, refresh chan struct{} }
}

var _ counters.DeletionObserver = (*Hub)(nil)

// New returns a hub; Run starts its work.
func New(o Options) *Hub {
	o.defaults()
	h := &Hub{o: o, byName: map[string]map[*Stream]struct{}{}, byPrefix: map[string]map[*Stream]struct{}{},
		perAddr: map[string]int{}, latest: map[string]Update{}, dirty: map[string]struct{}{}, toSend: map[string]struct{}{},
		done: make(chan struct{})}
	h.signals.dirty, h.signals.publish = make(chan struct{}, 1), make(chan struct{}, 1)
	h.signals.missed, h.signals.share = make(chan struct{}, 1), make(chan struct{}, 1)
	h.signals.refresh = make(chan struct{}, 1)
	h.anywhere.Store(&watchSet{})
	h.lastOK.Store(o.Now().UnixMicro())
	h.m = newMetrics(o.Registerer)
	return h
}

// signal wakes a loop without blocking: one pending wake-up is enough.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Close ends every stream (the process is stopping: docs/live-updates.md wants every
// stream ended within a second) and refuses new ones.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}

// Run does the hub's work until ctx ends: the reads from MySQL, and with
// a Transport the notices and the sharing of watches.
func (h *Hub) Run(ctx context.Context) {
	var wg sync.WaitGroup
	run := func(f func(context.Context)) {
		wg.Add(1)
		go func() { defer wg.Done(); f(ctx) }()
	}
	run(h.readLoop)
	if t := h.o.Transport; t != nil {
		run(h.publishLoop)
		run(h.shareLoop)
		run(func(ctx context.Context) {
			t.Subscribe(ctx, Listener{
				Changed:  h.changed,
				Missed:   func() { h.m.missed.Inc(); signal(h.signals.missed) },
				Watching: func() { signal(h.signals.refresh) },
			})
		})
	}
	wg.Wait()
}

// Wants implements counters.Observer: a change matters to this process
// when one of its streams watches the counter, or when another process's
// does (it is told of it through the transport).
func (h *Hub) Wants(name string) bool {
	anywhere := h.anywhere.Load()
	local := h.watching.Load()
	if !local && anywhere.empty() {
		return false
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	return (local && h.watchedLocked(name)) || (h.o.Transport != nil && anywhere.has(name))
}

// WantsDeletions implements counters.DeletionObserver: with a Transport,
// every deletion is told to the other processes, watched or not as far as
// this process knows. A process learns what the others watch some time
// after they begin (a Redis round trip or two; the next renewal, seconds
// later, when the announcement failed), and a deletion, unlike other
// changes, is found by no check: a prefix stream on another process would
// otherwise miss the deletion of a counter that did not change while it
// was open, if committed within that time.
func (h *Hub) WantsDeletions() bool { return h.o.Transport != nil }

// Committed implements counters.Observer. It runs in the writer's
// goroutine, so it only marks names: with no stream open anywhere, it costs
// two atomic loads (and a deletion a notice).
func (h *Hub) Committed(_ context.Context, changes []counters.Change) {
	anywhere := h.anywhere.Load()
	local := h.watching.Load()
	if !local && anywhere.empty() && !(h.WantsDeletions() && counters.AnyDeleted(changes)) {
		return
	}
	var mark, send []string
	h.mu.RLock()
	for _, c := range changes {
		if local && h.watchedLocked(c.Name) {
			mark = append(mark, c.Name)
		}
		if h.o.Transport != nil && (c.Deleted || anywhere.has(c.Name)) {
			send = append(send, c.Name)
		}
	}
	h.mu.RUnlock()
	if len(mark)+len(send) == 0 {
		return
	}
	h.marks.Lock()
	for _, n := range mark {
		h.dirty[n] = struct{}{}
	}
	for _, n := range send {
		h.toSend[n] = struct{}{}
	}
	h.marks.Unlock()
	if len(mark) > 0 {
		signal(h.signals.dirty)
	}
	if len(send) > 0 {
		signal(h.signals.publish)
	}
}

// changed marks the names another process changed, if watched here.
func (h *Hub) changed(names []string) {
	if !h.watching.Load() {
		return
	}
	var mark []string
	h.mu.RLock()
	for _, n := range names {
		if h.watchedLocked(n) {
			mark = append(mark, n)
		}
	}
	h.mu.RUnlock()
	if len(mark) == 0 {
		return
	}
	h.marks.Lock()
	for _, n := range mark {
		h.dirty[n] = struct{}{}
	}
	h.marks.Unlock()
	signal(h.signals.dirty)
}

// watchedLocked reports whether a stream here watches name.
func (h *Hub) watchedLocked(name string) bool {
	if len(h.byName[name]) > 0 {
		return true
	}
	for p := range h.byPrefix {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// readLoop is the one reader of watched counters: marked ones as soon as
// they are marked, all of them every CheckEvery and after a Transport may
// have missed notices. One goroutine, so reads follow commit order.
//
// Marked counters are read at most once per Interval: no stream sends a
// counter more often, and a hot counter then costs MySQL ten small reads a
// second per process, whatever its rate; read at once after every commit,
// it was read thousands of times a second, in competition with its own
// increments for MySQL.
func (h *Hub) readLoop(ctx context.Context) {
	tick := time.NewTicker(h.o.CheckEvery)
	defer tick.Stop()
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.signals.dirty:
			if !pace(ctx, &last, Interval) {
				return
			}
			h.marks.Lock()
			names := make([]string, 0, len(h.dirty))
			for n := range h.dirty {
				names = append(names, n)
			}
			clear(h.dirty)
			h.marks.Unlock()
			h.read(ctx, Query{Names: names}, true)
		case <-tick.C:
			h.checkAll(ctx)
		case <-h.signals.missed:
			h.checkAll(ctx)
		}
	}
}

// checkAll reads every watched counter, and those under every watched
// prefix that changed since the last check that worked (see checkOverlap).
func (h *Hub) checkAll(ctx context.Context) {
	if !h.watching.Load() {
		h.lastOK.Store(h.o.Now().UnixMicro())
		return
	}
	began := h.o.Now().UnixMicro()
	w := h.localWatch()
	q := Query{Names: w.Names, Prefixes: w.Prefixes, Since: h.lastOK.Load() - checkOverlap.Microseconds()}
	h.m.checks.Inc()
	if h.read(ctx, q, false) {
		h.lastOK.Store(began)
	}
}

// read runs q (the names in chunks) and hands on what is new; it reports
// whether every query worked. dirty says the names were marked by a
// change, for the metrics.
func (h *Hub) read(ctx context.Context, q Query, dirty bool) bool {
	ok := true
	for len(q.Names) > 0 || len(q.Prefixes) > 0 {
		part := q
		if len(part.Names) > maxNamesPerQuery {
			part.Names = part.Names[:maxNamesPerQuery]
		}
		q.Names, q.Prefixes = q.Names[len(part.Names):], nil
		rctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
		rows, err := h.o.Reader.ReadLive(rctx, part)
		cancel()
		if dirty {
			h.m.reads.WithLabelValues("changed").Inc()
		} else {
			h.m.reads.WithLabelValues("check").Inc()
		}
		if err != nil {
			if ctx.Err() == nil {
				h.m.readErrors.Inc()
				// Once per outage, not ten times a second.
				if !h.failing {
					h.o.Log.Warn("live updates: reading watched counters failed; streams wait for MySQL", "error", err.Error())
				}
				h.failing = true
			}
			ok = false
			continue
		}
		if h.failing {
			h.failing = false
			h.o.Log.Info("live updates: reading watched counters again")
		}
		h.apply(part.Names, rows, dirty)
	}
	return ok
}

// apply hands on the states read for names (present in rows or deleted)
// and the rows read under prefixes, each only when newer than the last.
// changed says the names were marked by a change (not read by a check).
func (h *Hub) apply(names []string, rows []Update, changed bool) {
	slices.SortFunc(rows, func(a, b Update) int { return compareInt(a.Version, b.Version) })
	h.mu.RLock()
	defer h.mu.RUnlock()
	h.latestMu.Lock()
	defer h.latestMu.Unlock()
	present := make(map[string]struct{}, len(rows))
	for _, u := range rows {
		present[u.Name] = struct{}{}
		if last, ok := h.latest[u.Name]; ok && !last.Deleted && u.Version <= last.Version {
			continue
		}
		h.dispatchLocked(u)
	}
	for _, n := range names {
		if _, ok := present[n]; ok {
			continue
		}
		last, ok := h.latest[n]
		switch {
		case ok && !last.Deleted:
			h.dispatchLocked(Update{Name: n, Value: last.Value, Version: last.Version + 1, Deleted: true})
		case !ok && changed:
			// A change marked it and it is gone: deleted, though no state of
			// it was read before. That is a counter under a watched prefix
			// that did not change while its streams were open (a prefix
			// stream reads no counter when it opens, and a single
			// counter's stream always has a state here): its deletion is a
			// change like any other. Its last version is not known, so the
			// deletion's is the time of this read, after the deletion's
			// commit and after the open of every stream it reaches. A
			// check's names are never taken for deleted so: a public page
			// with no hit yet is missing, not deleted. A deletion committed
			// just before a stream opened and read just after it (reads of
			// marked names wait up to an Interval) reaches that stream too:
			// one deleted event of a counter that is not there, which a
			// client takes as what it is.
			h.dispatchLocked(Update{Name: n, Version: h.o.Now().UnixMicro(), Deleted: true})
		}
	}
}

// dispatchLocked records u as the latest state and offers it to every
// stream that watches its counter; the caller holds mu (shared) and
// latestMu.
func (h *Hub) dispatchLocked(u Update) {
	if h.watchedLocked(u.Name) {
		h.latest[u.Name] = u
	}
	for s := range h.byName[u.Name] {
		s.offer(u)
	}
	for p, ss := range h.byPrefix {
		if strings.HasPrefix(u.Name, p) {
			for s := range ss {
				s.offer(u)
			}
		}
	}
}

// publishLoop sends the marked names to the other processes, as many as
// accumulated since the last send, at most once per publishEvery. The
// names of a failed send go with the next: the others' checks would find
// a change, but not a deletion.
func (h *Hub) publishLoop(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-h.signals.publish:
		}
		if !pace(ctx, &last, publishEvery) {
			return
		}
		h.marks.Lock()
		names := make([]string, 0, len(h.toSend))
		for n := range h.toSend {
			names = append(names, n)
		}
		clear(h.toSend)
		h.marks.Unlock()
		pctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
		err := h.o.Transport.Publish(pctx, names)
		cancel()
		if err != nil {
			h.m.publishErrors.Inc()
			h.marks.Lock()
			for _, n := range names {
				h.toSend[n] = struct{}{}
			}
			h.marks.Unlock()
			signal(h.signals.publish)
		} else {
			h.m.published.Add(float64(len(names)))
		}
	}
}

// shareLoop renews this process's watches in the Transport and reads
// everyone's, every shareEvery and at once when this process starts
// watching something new; when another one does, it only reads them
// (sharing then would announce again, to every process, this one
// included: a loop).
func (h *Hub) shareLoop(ctx context.Context) {
	tick := time.NewTicker(shareEvery)
	defer tick.Stop()
	shared := false
	for {
		share := true
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-h.signals.share:
		case <-h.signals.refresh:
			share = false
		}
		w := h.localWatch()
		cctx, cancel := context.WithTimeout(ctx, h.o.Timeout)
		if share && (len(w.Names)+len(w.Prefixes) > 0 || shared) {
			shared = len(w.Names)+len(w.Prefixes) > 0
			if err := h.o.Transport.Share(cctx, w, watchTTL); err != nil {
				h.m.publishErrors.Inc()
			}
		}
		all, err := h.o.Transport.Watched(cctx)
		cancel()
		if err != nil {
			// Keep what was known, and what is watched here: a Redis that
			// is down carries nothing anyway.
			continue
		}
		h.anywhere.Store(newWatchSet(all, w))
	}
}

// localWatch is what the streams of this process watch.
func (h *Hub) localWatch() Watch {
	h.mu.RLock()
	defer h.mu.RUnlock()
	w := Watch{Names: make([]string, 0, len(h.byName)), Prefixes: make([]string, 0, len(h.byPrefix))}
	for n := range h.byName {
		w.Names = append(w.Names, n)
	}
	for p := range h.byPrefix {
		w.Prefixes = append(w.Prefixes, p)
	}
	return w
}

// Request is a client's ask for a stream.
type Request struct {
	Addr string // the client (an address, or an IPv6 /64), for the per-address cap
	// Name or Prefix: one counter's stream, or every counter under Prefix.
	Name, Prefix string
	// LastEventID is the client's Last-Event-ID header, "" without one.
	LastEventID string
	// Missing says a missing counter streams value 0 (public page hits)
	// instead of ENOTFOUND.
	Missing bool
}

// Counter opens the stream of one counter: ENOTFOUND when it does not
// exist (unless r.Missing), ERATELIMITED past the caps. Its first event is
// the counter's current state, unless the client's Last-Event-ID is that
// state's or a later one of the same counter.
func (h *Hub) Counter(ctx context.Context, r Request) (*Stream, error) {
	s, err := h.add(r, r.Name, "", 0)
	if err != nil {
		return nil, err
	}
	// Registered before the read: a change that commits meanwhile is
	// either in the read or read again after it.
	rows, err := h.o.Reader.ReadLive(ctx, Query{Names: []string{r.Name}})
	if err != nil {
		s.Close()
		return nil, err
	}
	cur := Update{Name: r.Name}
	if len(rows) == 1 {
		cur = rows[0]
	} else if !r.Missing {
		s.Close()
		return nil, counters.Errorf(counters.ENOTFOUND, "Counter not found.")
	}
	// An id the counter has not reached is not one of its versions (another
	// database, a garbled header): the client gets the current value, as for
	// no id (it must never get stuck waiting, Mercure #704).
	if id, ok := parseID(r.LastEventID); ok && id <= cur.Version {
		s.setFloor(id)
	}
	h.latestMu.Lock()
	if last, ok := h.latest[r.Name]; len(rows) == 1 && (!ok || last.Deleted || cur.Version > last.Version) {
		h.latest[r.Name] = cur
	}
	h.latestMu.Unlock()
	s.offer(cur)
	return s, nil
}

// Prefix opens the stream of every counter under r.Prefix (non-empty). It
// sends changes only: those after it opened, or with a Last-Event-ID, the
// current state of each counter under the prefix that changed after it
// (of every one, for an id that is no version of this service).
func (h *Hub) Prefix(ctx context.Context, r Request) (*Stream, error) {
	if r.Prefix == "" {
		return nil, counters.Errorf(counters.EINVALID, "The prefix must not be empty.")
	}
	// The floor is set before the stream is registered: the hub offers it
	// states from then on, under the stream's lock.
	floor := h.o.Now().UnixMicro()
	if id, ok := parseID(r.LastEventID); ok && id <= floor {
		floor = id
	} else if strings.TrimSpace(r.LastEventID) != "" {
		// An id the service does not know (garbled, not positive, ahead
		// of this clock: another database's) is answered with the current
		// value of every counter under the prefix, as a single counter's
		// stream answers with its value (docs/live-updates.md): taken for
		// no id, it sent nothing until a counter changed, and a client
		// that had missed changes waited for nothing.
		floor = 0
	}
	s, err := h.add(r, "", r.Prefix, floor)
	if err != nil {
		return nil, err
	}
	// Registered before the read, as for Counter; the read also makes a
	// stream that MySQL cannot serve fail before it starts (503).
	rows, err := h.o.Reader.ReadLive(ctx, Query{Prefixes: []string{r.Prefix}, Since: floor})
	if err != nil {
		s.Close()
		return nil, err
	}
	slices.SortFunc(rows, func(a, b Update) int { return compareInt(a.Version, b.Version) })
	for _, u := range rows {
		s.offer(u)
	}
	return s, nil
}

// pace waits until every has passed since *last, then sets *last to now;
// false when ctx ended first.
func pace(ctx context.Context, last *time.Time, every time.Duration) bool {
	if wait := every - time.Since(*last); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	*last = time.Now()
	return true
}

// parseID reads a Last-Event-ID: a version, a positive decimal.
func parseID(id string) (int64, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(id), 10, 64)
	return v, err == nil && v > 0
}

// add registers a stream within the caps, with its floor (see Stream).
func (h *Hub) add(r Request, name, prefix string, floor int64) (*Stream, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.closed:
		return nil, counters.Errorf(counters.EUNAVAILABLE, "The service is shutting down; connect again.")
	case h.perAddr[r.Addr] >= h.o.MaxPerAddr:
		h.m.refused.WithLabelValues("address").Inc()
		return nil, counters.Errorf(counters.ERATELIMITED, "Too many open streams from this address (at most %d); close one first.", h.o.MaxPerAddr)
	case h.open >= h.o.MaxStreams:
		h.m.refused.WithLabelValues("total").Inc()
		return nil, counters.Errorf(counters.ERATELIMITED, "Too many open streams on this server (at most %d); try again later.", h.o.MaxStreams)
	}
	s := newStream(h, r.Addr, name, prefix, floor)
	index, key := h.byName, name
	if prefix != "" {
		index, key = h.byPrefix, prefix
	}
	fresh := len(index[key]) == 0
	if index[key] == nil {
		index[key] = map[*Stream]struct{}{}
	}
	index[key][s] = struct{}{}
	h.perAddr[r.Addr]++
	h.open++
	h.watching.Store(true)
	if fresh && h.o.Transport != nil {
		signal(h.signals.share) // publishers learn of the new watch at once
	}
	if h.o.Transport == nil {
		h.anywhere.Store(&watchSet{all: true})
	}
	return s, nil
}

// remove unregisters s; the state of a counter nobody watches any more is
// forgotten, so the hub's memory follows what is watched.
func (h *Hub) remove(s *Stream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	index, key := h.byName, s.name
	if s.prefix != "" {
		index, key = h.byPrefix, s.prefix
	}
	if _, ok := index[key][s]; !ok {
		return
	}
	delete(index[key], s)
	if len(index[key]) == 0 {
		delete(index, key)
		h.latestMu.Lock()
		if s.prefix == "" {
			if !h.watchedLocked(key) {
				delete(h.latest, key)
			}
		} else {
			for n := range h.latest {
				if !h.watchedLocked(n) {
					delete(h.latest, n)
				}
			}
		}
		h.latestMu.Unlock()
	}
	if h.perAddr[s.addr]--; h.perAddr[s.addr] == 0 {
		delete(h.perAddr, s.addr)
	}
	h.open--
	if h.open == 0 {
		h.watching.Store(false)
		if h.o.Transport == nil {
			h.anywhere.Store(&watchSet{})
		}
	}
}

// Open is the number of open streams.
func (h *Hub) Open() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.open
}

func compareInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// watchSet is what any process watches, for the publishers' filter.
type watchSet struct {
	all      bool // without a Transport: whatever this process watches (see Committed)
	names    map[string]struct{}
	prefixes []string
}

func newWatchSet(ws ...Watch) *watchSet {
	s := &watchSet{names: map[string]struct{}{}}
	for _, w := range ws {
		for _, n := range w.Names {
			s.names[n] = struct{}{}
		}
		s.prefixes = append(s.prefixes, w.Prefixes...)
	}
	slices.Sort(s.prefixes)
	s.prefixes = slices.Compact(s.prefixes)
	return s
}

func (s *watchSet) empty() bool { return !s.all && len(s.names) == 0 && len(s.prefixes) == 0 }

func (s *watchSet) has(name string) bool {
	if s.all {
		return true
	}
	if _, ok := s.names[name]; ok {
		return true
	}
	for _, p := range s.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}
