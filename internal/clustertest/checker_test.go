package clustertest_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/foundation/stats"
)

// load drives processes of the service with increments of +1 and checks
// every answer from outside, as a client would:
//
//   - no answer is a 5xx (or any other failure, or no answer at all),
//     unless outage allows a 503 (below);
//   - nothing is lost or doubled: each counter's acknowledged values are
//     exactly 1..n and its final value is n;
//   - nothing is stale: a read that starts after an increment was answered,
//     on whichever process, shows that value or a later one; or, where
//     staleWithin allows it, a read may miss increments answered less than
//     staleWithin before it began, never older ones.
//
// Each worker writes through one process and reads the counter back
// through the next, so every read crosses processes (and, on a cluster,
// database nodes).
type load struct {
	procs []*apptest.Env
	began time.Time

	mu      sync.Mutex
	acked   map[string][]int64    // the values increments were answered with
	answers map[string][]answered // the same, with when each answer came
	floor   map[string]int64      // the highest value answered so far
	// when the first and the last stale read were answered, after began
	firstStale, lastStale time.Duration
	maxStaleness          time.Duration   // of the stale reads (see staleRead)
	writeTimes            []time.Duration // how long each answered write took

	requests, reads, stale, tooStale, failed atomic.Int64
	samples                                  sampleLog

	// staleWithin, when not zero, lets a read miss increments that were
	// answered less than staleWithin before it began: after a Redis
	// Sentinel failover the new primary may lack invalidations that the
	// old one confirmed, and serve entries until their lease ends.
	staleWithin time.Duration

	// outage lets an answer be a 503 that is honest about what it did (a
	// database node out of its cluster): a read's or a refused write's
	// says "nothing was changed", a write's whose outcome is unknown "may
	// or may not have been applied". Each of the latter may have added 1,
	// so a counter's acknowledged values are distinct and its final value
	// lies between their count and their count plus its unknown ones.
	outage            bool
	unknown           map[string]int // the writes answered "may or may not", by counter
	refused, unknowns atomic.Int64   // 503s that said nothing was changed, and the others
}

// answered is an increment's answer: its value, and when it came (after
// began).
type answered struct {
	value int64
	at    time.Duration
}

func newLoad(procs []*apptest.Env) *load {
	return &load{procs: procs, began: time.Now(), acked: map[string][]int64{}, answers: map[string][]answered{}, floor: map[string]int64{},
		unknown: map[string]int{}}
}

// sampleLog keeps the first few failures for the test's report.
type sampleLog struct {
	mu   sync.Mutex
	list []string
}

func (s *sampleLog) add(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.list) < 10 {
		s.list = append(s.list, fmt.Sprintf(format, args...))
	}
}

// run starts workers goroutines that each pick a counter with pick and
// increment it until d has passed.
func (l *load) run(workers int, d time.Duration, pick func(r *rand.Rand) string) {
	l.drive(workers, d, func(r *rand.Rand, writer, reader *apptest.Env) {
		l.incrementAndRead(writer, reader, pick(r))
	})
}

// drive starts workers goroutines that each run step until d has passed,
// worker w writing through process w and reading through the next one.
func (l *load) drive(workers int, d time.Duration, step func(r *rand.Rand, writer, reader *apptest.Env)) {
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 14))
			writer, reader := l.procs[w%len(l.procs)], l.procs[(w+1)%len(l.procs)]
			for time.Now().Before(stop) {
				step(r, writer, reader)
			}
		}()
	}
	wg.Wait()
}

func (l *load) incrementAndRead(writer, reader *apptest.Env, name string) {
	path := "/v1/counters/" + url.PathEscape(name)
	l.requests.Add(1)
	start := time.Now()
	res, err := writer.TryDo("POST", path+"/increment", "")
	answeredAt := time.Since(l.began)
	if l.unavailable(err, res, name, true) {
		return
	}
	var got struct{ Value int64 }
	if !l.ok(err, res, 200, "increment", &got) {
		return
	}
	l.written(time.Since(start))
	l.mu.Lock()
	l.acked[name] = append(l.acked[name], got.Value)
	l.answers[name] = append(l.answers[name], answered{got.Value, answeredAt})
	l.floor[name] = max(l.floor[name], got.Value)
	l.mu.Unlock()
	l.read(reader, name)
}

// read reads name through reader and checks that it shows no value older
// than an increment answered before the read began.
func (l *load) read(reader *apptest.Env, name string) {
	l.mu.Lock()
	floor := l.floor[name]
	l.mu.Unlock()
	// floor was read before the GET is sent: the read starts after every
	// increment whose answer it includes.
	l.reads.Add(1)
	began := time.Since(l.began)
	res, err := reader.TryDo("GET", "/v1/counters/"+url.PathEscape(name), "")
	if l.unavailable(err, res, name, false) {
		return
	}
	var got struct{ Value int64 }
	if !l.ok(err, res, 200, "read", &got) {
		return
	}
	if got.Value < floor {
		// Stale by as long as the first answer above what it showed
		// came before it began.
		l.mu.Lock()
		first := began
		for _, a := range l.answers[name] {
			if a.value > got.Value {
				first = min(first, a.at)
			}
		}
		l.mu.Unlock()
		l.staleRead(began-first, "read of %s showed %d, %v after a higher value was answered (%d before it began)",
			name, got.Value, (began - first).Round(time.Millisecond), floor)
	}
}

// staleRead counts a read that missed an answer which came staleness
// before it began, and notes when it was answered.
func (l *load) staleRead(staleness time.Duration, format string, args ...any) {
	l.stale.Add(1)
	if l.staleWithin == 0 || staleness > l.staleWithin {
		l.tooStale.Add(1)
		l.samples.add(format, args...)
	}
	at := time.Since(l.began)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.firstStale == 0 {
		l.firstStale = at
	}
	l.lastStale = at
	l.maxStaleness = max(l.maxStaleness, staleness)
}

// written notes how long an answered write took.
func (l *load) written(took time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writeTimes = append(l.writeTimes, took)
}

// unavailable reports a 503 that outage allows, and counts it: a write's
// that says "may or may not have been applied" as an unknown outcome of
// name, one that says "nothing was changed" as refused; any other 503
// message is a failure. It pauses briefly after each, as a client that
// honours Retry-After would, so that a node that refuses everything at
// once does not turn the load into a busy loop.
func (l *load) unavailable(err error, res apptest.Response, name string, write bool) bool {
	if !l.outage || err != nil || res.Status != 503 {
		return false
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(res.Body, &e)
	switch {
	case e.Error.Code != "unavailable" || res.Header.Get("Retry-After") == "":
		l.failed.Add(1)
		l.samples.add("a 503 without code unavailable or Retry-After: %s", res.Body)
	case strings.Contains(e.Error.Message, "nothing was changed"):
		l.refused.Add(1)
	case write && strings.Contains(e.Error.Message, "may or may not have been applied"):
		l.unknowns.Add(1)
		l.mu.Lock()
		l.unknown[name]++
		l.mu.Unlock()
	default:
		l.failed.Add(1)
		l.samples.add("a 503 that does not say what it changed: %s", res.Body)
	}
	time.Sleep(20 * time.Millisecond)
	return true
}

// ok decodes an answer with status want into v, or counts a failure.
func (l *load) ok(err error, res apptest.Response, want int, what string, v any) bool {
	if err == nil && res.Status == want {
		if err = json.Unmarshal(res.Body, v); err == nil {
			return true
		}
	}
	l.failed.Add(1)
	l.samples.add("%s: %v %d %s", what, err, res.Status, res.Body)
	return false
}

// check fails the test for any failed answer, stale read, lost or doubled
// increment, and logs what was measured.
func (l *load) check(t *testing.T, d time.Duration) {
	t.Helper()
	var p50, p99 time.Duration
	l.mu.Lock()
	if len(l.writeTimes) > 0 {
		self := func(d time.Duration) time.Duration { return d }
		p50 = stats.Percentile(l.writeTimes, 50, self).Round(100 * time.Microsecond)
		p99 = stats.Percentile(l.writeTimes, 99, self).Round(100 * time.Microsecond)
	}
	l.mu.Unlock()
	t.Logf("%d writes (%.0f/s, p50 %v, p99 %v) and %d reads across %d processes: %d failed, %d stale",
		l.requests.Load(), float64(l.requests.Load())/d.Seconds(), p50, p99, l.reads.Load(), len(l.procs), l.failed.Load(), l.stale.Load())
	if l.stale.Load() > 0 {
		t.Logf("stale reads answered from %v to %v after the load began, stale by up to %v",
			l.firstStale.Round(time.Millisecond), l.lastStale.Round(time.Millisecond), l.maxStaleness.Round(100*time.Microsecond))
	}
	if l.outage {
		t.Logf("503s: %d said nothing was changed, %d that the increment may or may not have been applied", l.refused.Load(), l.unknowns.Load())
	}
	for _, s := range l.samples.list {
		t.Log(s)
	}
	if n := l.failed.Load(); n != 0 {
		t.Errorf("%d requests failed; want 0", n)
	}
	if n := l.tooStale.Load(); n != 0 && l.staleWithin == 0 {
		t.Errorf("%d reads were stale; want 0", n)
	} else if n != 0 {
		t.Errorf("%d reads missed an answer that came more than %v before they began; want 0", n, l.staleWithin)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.outage {
		l.checkUnknown(t)
		return
	}
	lost := 0
	for name, values := range l.acked {
		slices.Sort(values)
		for i, v := range values {
			if v != int64(i+1) {
				t.Errorf("%s: the %dth smallest acknowledged value is %d; want each of 1..%d once", name, i+1, v, len(values))
				break
			}
		}
		res := l.procs[0].Do(t, "GET", "/v1/counters/"+url.PathEscape(name), "")
		var c struct{ Value int64 }
		res.Decode(t, &c)
		if c.Value != int64(len(values)) {
			lost++
			if lost <= 5 {
				t.Errorf("%s: value %d after %d acknowledged increments", name, c.Value, len(values))
			}
		}
	}
	if lost > 0 {
		t.Errorf("%d counters do not hold their acknowledged increments", lost)
	}
}

// checkUnknown is check's count of what was lost or doubled under outage,
// where some increments' outcomes are unknown; l.mu is held. Each value
// was handed out once; no acknowledged increment is missing from the final
// value, which holds no increment beyond those answered 200 or "may or
// may not have been applied". (One said to have changed nothing, yet
// applied, shows as a value above that.)
func (l *load) checkUnknown(t *testing.T) {
	t.Helper()
	names := map[string]bool{}
	for name := range l.acked {
		names[name] = true
	}
	for name := range l.unknown {
		names[name] = true
	}
	wrong := 0
	for name := range names {
		values := l.acked[name]
		slices.Sort(values)
		for j := 1; j < len(values); j++ {
			if values[j] == values[j-1] {
				t.Errorf("%s: value %d handed out twice", name, values[j])
				break
			}
		}
		var c struct{ Value int64 }
		res := l.procs[0].Do(t, "GET", "/v1/counters/"+url.PathEscape(name), "")
		if res.Status != 404 {
			res.Decode(t, &c)
		}
		acked, unknown := int64(len(values)), int64(l.unknown[name])
		highest := int64(0)
		if len(values) > 0 {
			highest = values[len(values)-1]
		}
		if c.Value < acked || c.Value > acked+unknown || c.Value < highest {
			wrong++
			if wrong <= 5 {
				t.Errorf("%s: value %d after %d acknowledged increments (the highest answered %d) and %d of unknown outcome; want %d to %d",
					name, c.Value, acked, highest, unknown, acked, acked+unknown)
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d counters do not hold their acknowledged increments, or hold more than were sent", wrong)
	}
}
