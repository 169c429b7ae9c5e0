package cache

import (
	"strings"
	"sync"
	"sync/atomic"
)

// maxPrefixes bounds the distrusted prefixes (failed resets); past it the
// whole cache is distrusted.
const maxPrefixes = 16

// distrust remembers the entries this process may no longer believe: a write
// committed in MySQL, but the cache could not confirm that the entry was
// invalidated. Reads of covered names go to MySQL until the repairer has
// confirmed an invalidation that ran after the write.
//
// Every mark carries the sequence number of the failure that set it. The
// repairer notes the current sequence before it starts, and afterwards clears
// only marks at or below it: a failure recorded while it worked may belong to
// a write that its invalidation ran before.
type distrust struct {
	max   int
	count atomic.Int64 // marks held; lets the read path skip the lock when 0

	mu       sync.Mutex
	seq      uint64
	names    map[string]uint64
	prefixes map[string]uint64 // "" covers every name
}

func newDistrust(max int) *distrust {
	return &distrust{max: max, names: map[string]uint64{}, prefixes: map[string]uint64{}}
}

// covers reports whether name must be read from MySQL.
func (d *distrust) covers(name string) bool {
	if d.count.Load() == 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.names[name]; ok {
		return true
	}
	for p := range d.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// markName distrusts one counter. Past the size limit the whole cache is
// distrusted instead: memory stays bounded and one flush repairs it all. It
// reports whether that just happened.
func (d *distrust) markName(name string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	if _, all := d.prefixes[""]; all || len(d.names) >= d.max {
		return d.markAllLocked()
	}
	d.names[name] = d.seq
	d.updateCount()
	return false
}

// markPrefix distrusts every counter whose name starts with p ("" = all),
// and reports whether the whole cache just became distrusted.
func (d *distrust) markPrefix(p string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	if _, all := d.prefixes[""]; all || p == "" || len(d.prefixes) >= maxPrefixes {
		return d.markAllLocked()
	}
	d.prefixes[p] = d.seq
	d.updateCount()
	return false
}

// markAllLocked replaces every mark by one on the whole cache, stamped with
// the latest sequence, and reports whether there was none before.
func (d *distrust) markAllLocked() bool {
	_, had := d.prefixes[""]
	clear(d.names)
	clear(d.prefixes)
	d.prefixes[""] = d.seq
	d.updateCount()
	return !had
}

func (d *distrust) updateCount() { d.count.Store(int64(len(d.names) + len(d.prefixes))) }

// snapshot returns the marks to repair and the sequence they are complete up to.
func (d *distrust) snapshot() (names, prefixes []string, upto uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for n := range d.names {
		names = append(names, n)
	}
	for p := range d.prefixes {
		prefixes = append(prefixes, p)
	}
	return names, prefixes, d.seq
}

// clearName lifts the mark on name unless it was set after upto.
func (d *distrust) clearName(name string, upto uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.names[name]; ok && s <= upto {
		delete(d.names, name)
	}
	d.updateCount()
}

// clearPrefix lifts the marks on p and on everything under p that were set
// up to upto: a flush of p invalidated all of them.
func (d *distrust) clearPrefix(p string, upto uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for q, s := range d.prefixes {
		if s <= upto && strings.HasPrefix(q, p) {
			delete(d.prefixes, q)
		}
	}
	for n, s := range d.names {
		if s <= upto && strings.HasPrefix(n, p) {
			delete(d.names, n)
		}
	}
	d.updateCount()
}

// size is the number of marks, for the gauge and for tests.
func (d *distrust) size() int { return int(d.count.Load()) }
