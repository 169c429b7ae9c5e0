package storage

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/foundation/deadline"
	"github.com/countersvc/countersvc/webhooks"
)

// HookRecorder is the Recorder of threshold webhooks: inside the
// transaction of a change of a watched counter it writes one outbox row
// per crossing (see webhooks.Hook.Crossings), and nothing when nothing
// crosses. Which counters are watched is known without I/O, from the
// process's copy of the enabled hooks.
//
// That copy is how fresh? A hook created, deleted, enabled or disabled by
// this process is seen by its next change (Reload runs before the API
// answers). Another process sees it at its next reload: at once when told
// through Redis (cache.Notices, wired in internal/wire), and at the latest
// ReloadEvery later when Redis is down or absent. A crossing committed by another process within
// that window, before it saw a new hook, sends nothing; the guide says so.
type HookRecorder struct {
	db  *HookStore
	log *slog.Logger
	set atomic.Pointer[hookSet]
	// OnRecord is told, without blocking, after a transaction that wrote
	// events committed (the relay's Wake); nil: nobody.
	OnRecord func()
	recorded atomic.Bool // an event was written since the last commit told of
	seen     sync.Map    // name -> *quietRange: what Quiet says, around the value last committed here
	seenN    atomic.Int64

	reloading sync.Mutex
}

// ReloadEvery is how often each process reads the hooks again, whatever it
// was told: the bound on how long a process may miss a hook's change.
const ReloadEvery = time.Second

// hookSet is the enabled hooks, by what they watch.
type hookSet struct {
	byName   map[string][]*webhooks.Hook
	prefixed []*webhooks.Hook
}

var (
	_ QuietRecorder     = (*HookRecorder)(nil)
	_ counters.Observer = (*HookRecorder)(nil)
)

// NewHookRecorder returns the recorder of the hooks in store; Reload loads
// them, and ReloadEvery keeps them fresh.
func NewHookRecorder(store *HookStore, log *slog.Logger) *HookRecorder {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &HookRecorder{db: store, log: log}
	r.set.Store(&hookSet{})
	return r
}

// Reload reads the enabled hooks again.
func (r *HookRecorder) Reload(ctx context.Context) error {
	r.reloading.Lock() // one at a time, so that an older read never replaces a newer
	defer r.reloading.Unlock()
	// Not the alerts: they have no thresholds, and a counter that only an
	// alert watches is written as one no hook watches (the alerts read
	// history, apart from the increments; see webhook_alerts.go).
	list, err := r.db.hooks(ctx, "SELECT "+hookColumns+" FROM webhook WHERE disabled_at IS NULL AND alert_window IS NULL")
	if err != nil {
		return err
	}
	set := &hookSet{byName: map[string][]*webhooks.Hook{}}
	for i := range list {
		h := &list[i]
		h.Secret = "" // the relay reads it with the event; it need not sit here
		if h.IsPrefix {
			set.prefixed = append(set.prefixed, h)
		} else {
			set.byName[h.Target] = append(set.byName[h.Target], h)
		}
	}
	r.set.Store(set)
	return nil
}

// ReloadEvery reloads the hooks every interval until ctx ends.
func (r *HookRecorder) ReloadEvery(ctx context.Context, every time.Duration) {
	deadline.Every(ctx, every, func(ctx context.Context) {
		if err := r.Reload(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn("webhooks: reloading the hooks failed; the last ones read stay in force", "error", err)
		}
	})
}

// Wants implements Recorder.
func (r *HookRecorder) Wants(name string) bool {
	set := r.set.Load()
	if len(set.byName[name]) > 0 {
		return true
	}
	for _, h := range set.prefixed {
		if strings.HasPrefix(name, h.Target) {
			return true
		}
	}
	return false
}

// Record implements Recorder: one INSERT of every crossing's event, or no
// statement at all.
func (r *HookRecorder) Record(ctx context.Context, tx Execer, changes []counters.Change) error {
	set := r.set.Load()
	var args []any
	rows := 0
	for _, c := range changes {
		if c.Deleted {
			continue
		}
		for _, h := range set.watching(c.Name) {
			for _, x := range h.Crossings(c.Prev, c.Value) {
				args = append(args, h.ID, newMsgID(), webhooks.Body(c, x), eventPending, c.At)
				rows++
			}
		}
	}
	if rows == 0 {
		return nil
	}
	// Due at the database's clock, which the relays' claims read, not at
	// the store's (which tests may move).
	_, err := tx.ExecContext(ctx, "INSERT INTO webhook_event (hook_id, msg_id, body, status, attempts, next_attempt_at, created_at) VALUES "+
		placeholders("(?, ?, ?, ?, 0, UTC_TIMESTAMP(6), ?)", ", ", rows), args...)
	if err == nil {
		r.recorded.Store(true)
	}
	return err
}

// The recorder is also an observer of the counters it records for, so that
// the relay is woken after the commit: Wants is the Recorder's.

// Committed implements counters.Observer: the relay is woken after the
// commit, when it can see the events. A wake for a transaction that
// rolled back, or one that comes early, costs the relay one empty claim.
// It also keeps each watched counter's last value, for Quiet.
func (r *HookRecorder) Committed(_ context.Context, changes []counters.Change) {
	if r.recorded.Load() && r.recorded.Swap(false) && r.OnRecord != nil {
		r.OnRecord()
	}
	set := r.set.Load()
	for _, c := range changes {
		if c.Deleted {
			r.seen.Delete(c.Name)
			continue
		}
		if old, ok := r.seen.Load(c.Name); ok {
			if q := old.(*quietRange); q.set == set && q.lo <= c.Value && c.Value <= q.hi {
				continue // still within: the range is the same
			}
		}
		r.remember(set.quiet(c.Name, c.Value))
	}
}

// maxSeen bounds how many counters' ranges a process keeps: a prefix hook
// may watch millions. Past it they are forgotten, and each counter's next
// increment is written with the recorders once, which tells its value again.
const maxSeen = 1 << 16

func (r *HookRecorder) remember(q *quietRange) {
	if _, loaded := r.seen.Swap(q.name, q); !loaded && r.seenN.Add(1) > maxSeen {
		r.seen.Clear()
		r.seenN.Store(0)
	}
}

// quietRange is the range within which changes of a counter cross no
// threshold of the hooks of set, around a value of the counter.
type quietRange struct {
	set    *hookSet
	name   string
	value  int64
	lo, hi int64
}

// Quiet implements QuietRecorder: the range around the value this process
// last committed for name (another process's changes may have taken the
// counter out of it since: the store checks). Unknown until then.
func (r *HookRecorder) Quiet(name string) (lo, hi int64, ok bool) {
	v, ok := r.seen.Load(name)
	if !ok {
		return 0, 0, false
	}
	q := v.(*quietRange)
	if set := r.set.Load(); q.set != set { // the hooks changed
		q = set.quiet(name, q.value)
		r.remember(q)
	}
	return q.lo, q.hi, true
}

// quiet is the range around value within which changes of name cross no
// threshold of the hooks of set that watch it.
func (set *hookSet) quiet(name string, value int64) *quietRange {
	q := &quietRange{set: set, name: name, value: value, lo: math.MinInt64, hi: math.MaxInt64}
	for _, h := range set.watching(name) {
		lo, hi := h.Quiet(value)
		q.lo, q.hi = max(q.lo, lo), min(q.hi, hi)
	}
	return q
}

// watching returns the hooks that watch name, by name or prefix.
func (set *hookSet) watching(name string) []*webhooks.Hook {
	hs := slices.Clip(set.byName[name])
	for _, h := range set.prefixed {
		if strings.HasPrefix(name, h.Target) {
			hs = append(hs, h)
		}
	}
	return hs
}

// newMsgID is an event's webhook-id: random, so that a database restored
// from a backup, whose AUTO_INCREMENT ids come again, never sends a new
// event under an id a receiver has already seen (and drops as a repeat).
func newMsgID() string {
	b := make([]byte, 16)
	rand.Read(b)
	return "msg_" + base64.RawURLEncoding.EncodeToString(b)
}
