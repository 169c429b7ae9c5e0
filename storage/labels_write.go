package storage

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
)

// The write side of breakdowns (migrations/012_counter_label.up.sql and
// 013), a Tally (Labels): the labels of an increment's steps (a
// breakdowns.Labelled, the steps' counters.Extra) are
// written with the value and its history, packed (see packAdds), never a
// row per value. A round whose steps all count in the quarter hour of its
// commit (the coalescer's) appends them to its counter's label slot in
// the upsert it runs anyway: one statement, as an unlabelled round. Any
// other labelled write, and a round the slot refuses (full, or holding
// another day), is a transaction that moves the counter's label slot to
// counter_label_pending and then adds a row there per counter and UTC
// day, after the counter's row and its history. Unlabelled steps write
// nothing here.
//
// The bound (a counter keeps at most LabelValues distinct values per label
// and day, the rest count as breakdowns.LabelOther) is decided later, when
// the rows are settled (labels_settle.go), in the order the counter's
// writes committed. Deciding it here made every labelled round upsert a
// row per distinct value, each counted against its day's values, while it
// held the counter's row lock: a hot page's rounds took four times as long
// as unlabelled ones, one after another.

// DefaultLabelSlot is how many bytes of packed labels a counter's label
// slot takes before a write moves them out: a few dozen rounds of page
// hits, small enough that appending to it costs an upsert little.
const DefaultLabelSlot = 4096

// Labels is the tally of breakdowns: with on, increments count the
// labels their steps carry (breakdowns.Labelled), and a counter keeps at
// most values distinct values of a label per UTC day (0:
// breakdowns.DefaultLabelValues), which settling decides (see
// BreakdownsOf). Off, labels are not counted, but what they counted is
// still deleted with its counter and by history's retention.
func Labels(on bool, values int) Tally { return &labelTally{on: on, values: values} }

type labelTally struct {
	on     bool
	values int
	// slot is how many bytes of packed labels a counter's row takes
	// before a write moves them out (0: DefaultLabelSlot); tests shrink it
	// (export_test.go).
	slot int
}

// takes implements Tally.
func (t *labelTally) takes(x counters.Extra) bool {
	_, ok := x.(breakdowns.Labelled)
	return ok && t.on
}

// deletes implements Tally: pending labels before the settled ones: a
// pass settling the counter's rows holds them, then writes its labels
// (see labels_settle.go), so this waits for it and then removes those
// too.
func (t *labelTally) deletes() []string {
	return []string{"DELETE FROM counter_label_pending WHERE name = ?", "DELETE FROM counter_label WHERE name = ?", "DELETE FROM counter_label_month WHERE name = ?"}
}

// purges implements Tally: pending rows, label slots, settled rows, label
// months, pending ones before settled ones, as DELETE takes them.
func (t *labelTally) purges(ctx context.Context, db *sql.DB, before time.Time) []func(limit int) (int64, error) {
	day, month := before.Format(time.DateOnly), monthOf(before).Format(time.DateOnly)
	return []func(int) (int64, error){
		deleting(ctx, db, "DELETE FROM counter_label_pending WHERE day < ? LIMIT ?", day),
		deleting(ctx, db, "UPDATE counter SET label_slot = NULL, label_day = NULL WHERE label_day < ? LIMIT ?", day),
		deleting(ctx, db, "DELETE FROM counter_label WHERE day < ? ORDER BY day LIMIT ?", day),
		deleting(ctx, db, "DELETE FROM counter_label_month WHERE month < ? ORDER BY month LIMIT ?", month),
		func(limit int) (int64, error) { return trimLabelMonths(ctx, db, before, limit) },
	}
}

// slotLabels is what one row of a slot upsert appends to its counter's
// label slot: the UTC day of its steps and their packed adds (nil: none).
type slotLabels struct {
	day  any // a date, or nil
	adds []byte
}

// labelSlots are the slotLabels of sorted's rows, whose steps all count
// in the quarter hour of now (inQuarterOf).
func labelSlots(sorted []counters.Increment, now time.Time) []slotLabels {
	out := make([]slotLabels, len(sorted))
	for i, d := range sorted {
		if adds := labelAdds([]counters.Change{incrementChange(d, 0, now)}); len(adds) > 0 {
			out[i] = slotLabels{day: adds[0].day.Format(time.DateOnly), adds: packAdds(adds)}
		}
	}
	return out
}

// slotFill is how many bytes this process has appended, or is appending,
// to each counter's label slot since it last moved it out: a round that
// would not fit goes the transactional way at once, rather than through
// the slot's refusal (a failed statement, the history slots' check, then
// the transaction). A round takes its room before it is sent (reserve),
// so that rounds of one counter in flight together count each other:
// checked one after the other, two that fit alone both went to the slot
// and the second was refused, and two that did not both moved it out, the
// second an empty one. A round that moves the slot out leaves the rounds
// still in flight counted (they may land after it). Other processes'
// appends are not in it, so the slot may still refuse: that stays the
// exact test, and a figure here that is off costs a refusal or an early
// move, never a label. Bounded: emptied when full.
type slotFill struct {
	mu       sync.Mutex
	counters map[string]slotBytes
}

// slotBytes are one counter's bytes in slotFill: in its slot, by this
// process's count, and in rounds still in flight (some of those).
type slotBytes struct{ in, flying int }

// slotFillKept bounds slotFill's counters.
const slotFillKept = 1 << 16

// reserve says whether labels fit in their counters' slots of size
// bytes, as far as this process knows, and takes their room when they
// do; done must follow once the round has its answer.
func (f *slotFill) reserve(sorted []counters.Increment, labels []slotLabels, size int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.counters == nil || len(f.counters) >= slotFillKept {
		f.counters = map[string]slotBytes{}
	}
	for i, l := range labels {
		if l.adds != nil && f.counters[sorted[i].Name].in+len(l.adds) > size {
			return false
		}
	}
	for i, l := range labels {
		if l.adds != nil {
			c := f.counters[sorted[i].Name]
			c.in, c.flying = c.in+len(l.adds), c.flying+len(l.adds)
			f.counters[sorted[i].Name] = c
		}
	}
	return true
}

// done ends what reserve took: the round's labels are in their slots
// (appended), or the slots refused them.
func (f *slotFill) done(sorted []counters.Increment, labels []slotLabels, appended bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, l := range labels {
		c, ok := f.counters[sorted[i].Name]
		if !ok || l.adds == nil {
			continue
		}
		c.flying = max(0, c.flying-len(l.adds))
		if !appended {
			c.in = max(0, c.in-len(l.adds))
		}
		f.counters[sorted[i].Name] = c
	}
}

// moving counts labels' counters' slots as moved out, by a round about
// to move them: the rounds after it then append to the emptied slots (the
// counter's row lock puts them after the move) rather than move them too.
func (f *slotFill) moving(sorted []counters.Increment, labels []slotLabels) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, l := range labels {
		if c, ok := f.counters[sorted[i].Name]; ok && l.adds != nil {
			f.counters[sorted[i].Name] = slotBytes{in: c.flying, flying: c.flying}
		}
	}
}

// slotSize is the size of a label slot (t may be nil: no labels tally).
func (t *labelTally) slotSize() int {
	if t == nil || t.slot <= 0 {
		return DefaultLabelSlot
	}
	return t.slot
}

// The label slot's part of a slot upsert (upsertManyHead,
// upsertManyUpdate), as history_write.go's slotColumns, slotFree and
// slotUpdate are the history slot's: each row then takes two more
// arguments (slotLabels), and the statement one after its rows, the
// slot's size. The slot takes a row's adds when it is empty, or holds
// their day and has room for them; else the value's assignment refuses
// the step (NULL into NOT NULL), and the round goes the transactional
// way, which moves the slot out first. A row without labels
// (VALUES(label_slot) NULL), padding included, leaves it alone.
const (
	labelSlotColumns = ", label_day, label_slot"
	labelSlotFree    = "(VALUES(label_slot) IS NULL OR label_slot IS NULL OR (label_day = VALUES(label_day) AND LENGTH(label_slot) + LENGTH(VALUES(label_slot)) <= ?))"
	labelSlotUpdate  = `
		label_slot = IF(VALUES(label_slot) IS NULL, label_slot, CONCAT(COALESCE(label_slot, ''), VALUES(label_slot))),
		label_day = IF(VALUES(label_slot) IS NULL, label_day, VALUES(label_day)),`
)

// labelAdd is one value's share of a counter's steps on one UTC day.
type labelAdd struct {
	name, label string
	day         time.Time
	value       string
	by          int64
}

// labelAdds lists what changes add to their labels, one entry per
// counter, UTC day, label and value, in that order (the order of the
// pending rows and of the adds packed in each). Steps of one value are
// summed, in the order they came, where the sum fits in an int64; else
// they stay two entries, which settling adds.
//
// A round of a hot page repeats few labels and values many times: its
// steps' labels are found among a counter's day's labels by position (a
// step's labels come in key order, mostly the same keys), and a value
// among its label's values by comparing the few there are (a map once
// there are many), and only the distinct ones are sorted. A map of every
// (counter, day, label, value) and a sort of the adds cost a round of
// twenty 8-label steps about ten times the time, most of it hashing.
func labelAdds(changes []counters.Change) []labelAdd {
	n := 0
	for _, c := range changes {
		for _, p := range c.Steps {
			if l, ok := p.Extra.(breakdowns.Labelled); ok && p.By != 0 {
				n += l.Len()
			}
		}
	}
	if n == 0 {
		return nil
	}
	var (
		adds    = make([]labelAdd, 0, min(n, 64)) // distinct values: fewer than n
		next    = make([]int32, 0, min(n, 64))    // the add of the same label after each, -1: none
		labels  = make([]valueChain, 0, breakdowns.MaxLabels)
		days    []dayLabels
		dayOf   = map[dayKey]int{}
		current = -1 // the day of the step before, the likeliest of the next
	)
	for _, c := range changes {
		for _, p := range c.Steps {
			l, ok := p.Extra.(breakdowns.Labelled)
			if p.By == 0 || !ok {
				continue
			}
			day, _ := history.QuarterOf(p.At)
			if current < 0 || days[current].name != c.Name || !days[current].day.Equal(day) {
				k := dayKey{c.Name, day.Unix()}
				i, ok := dayOf[k]
				if !ok {
					i = len(days)
					dayOf[k] = i
					days = append(days, dayLabels{name: c.Name, day: day, labels: make([]int, 0, l.Len())})
				}
				current = i
			}
			d := &days[current]
			pos := 0
			for k, v := range l.All() {
				b := d.find(labels, k, pos)
				if b < 0 {
					b = len(labels)
					labels = append(labels, valueChain{label: k, first: -1, last: -1})
					d.labels = append(d.labels, b)
				}
				pos++
				ch := &labels[b]
				if i := ch.find(adds, next, v); i >= 0 {
					if sum, fits := counters.Add(adds[i].by, p.By); fits {
						adds[i].by = sum
						continue
					}
				}
				ch.add(adds, next, len(adds), v)
				adds = append(adds, labelAdd{name: c.Name, label: k, day: day, value: v, by: p.By})
				next = append(next, -1)
			}
		}
	}
	// Only the distinct ones sorted: days, their labels, and each label's
	// values (stably: a value's second entry, past a full sum, stays
	// second).
	slices.SortFunc(days, func(a, b dayLabels) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return a.day.Compare(b.day)
	})
	out := make([]labelAdd, 0, len(adds))
	var values []int32
	for _, d := range days {
		slices.SortFunc(d.labels, func(a, b int) int { return strings.Compare(labels[a].label, labels[b].label) })
		for _, b := range d.labels {
			values = values[:0]
			for i := labels[b].first; i >= 0; i = next[i] {
				values = append(values, i)
			}
			slices.SortStableFunc(values, func(a, b int32) int { return strings.Compare(adds[a].value, adds[b].value) })
			for _, i := range values {
				out = append(out, adds[i])
			}
		}
	}
	return out
}

// dayKey is a counter's UTC day in labelAdds.
type dayKey struct {
	name string
	day  int64
}

// dayLabels are the labels of a counter's day in labelAdds: indexes of
// its valueChains.
type dayLabels struct {
	name   string
	day    time.Time
	labels []int
}

// find is the index of the chain of label among chains that d holds, -1
// when none; pos is where the label stands in its step, where it most
// likely stands in d too.
func (d *dayLabels) find(chains []valueChain, label string, pos int) int {
	if pos < len(d.labels) && chains[d.labels[pos]].label == label {
		return d.labels[pos]
	}
	for _, b := range d.labels {
		if chains[b].label == label {
			return b
		}
	}
	return -1
}

// valueChain is one label's adds of a counter's day in labelAdds, linked
// through next in the order added, with a map of them once there are
// many.
type valueChain struct {
	label       string
	first, last int32
	count       int
	index       map[string]int32 // value to its last add; nil while few
}

// chainMapped is how many values a valueChain compares one by one before
// it keeps a map of them.
const chainMapped = 16

// find is the index of the last add of value in c, -1 when none.
func (c *valueChain) find(adds []labelAdd, next []int32, value string) int32 {
	if c.index != nil {
		if i, ok := c.index[value]; ok {
			return i
		}
		return -1
	}
	found := int32(-1)
	for i := c.first; i >= 0; i = next[i] {
		if adds[i].value == value {
			found = i
		}
	}
	return found
}

// add links the add at index i, of value, to c's end.
func (c *valueChain) add(adds []labelAdd, next []int32, i int, value string) {
	if c.last >= 0 {
		next[c.last] = int32(i)
	} else {
		c.first = int32(i)
	}
	c.last = int32(i)
	if c.count++; c.index == nil && c.count > chainMapped {
		c.index = make(map[string]int32, 2*chainMapped)
		for j := c.first; j >= 0 && j != int32(i); j = next[j] {
			c.index[adds[j].value] = j
		}
	}
	if c.index != nil {
		c.index[value] = int32(i)
	}
}

// pendingInsert is the statement that adds adds (sorted by labelAdds) to
// counter_label_pending, a row per counter and day, "" when there is
// nothing to add. The row's at is the counter's updated_at, read from its
// row, which this transaction's upsert has locked and moved forward. The
// read is a subquery of VALUES: INSERT ... SELECT from a derived table
// of the rows made MariaDB build a temporary table on disk, a BLOB
// column being one, which took six times as long.
func pendingInsert(adds []labelAdd) (string, []any) {
	if len(adds) == 0 {
		return "", nil
	}
	var args []any
	rows := 0
	for i := 0; i < len(adds); rows++ {
		j := i + 1
		for j < len(adds) && adds[j].name == adds[i].name && adds[j].day.Equal(adds[i].day) {
			j++
		}
		args = append(args, adds[i].name, adds[i].name, adds[i].day.Format(time.DateOnly), packAdds(adds[i:j]))
		i = j
	}
	// A transaction that wrote a counter's labels twice (none does) would
	// find its own row: the adds follow the first ones.
	return "INSERT INTO counter_label_pending (name, at, day, adds) VALUES " +
		placeholders("(?, (SELECT updated_at FROM counter WHERE name = ?), ?, ?)", ", ", rows) +
		" ON DUPLICATE KEY UPDATE adds = CONCAT(adds, VALUES(adds))", args
}

// counts implements Tally: the statements that add changes' labels in a
// transaction that has upserted their counters, none when there are none
// or breakdowns are off: the counters' label slots move out first, as a
// pending row keyed by the updated_at the upsert just set (so before the
// changes' own, whose row follows under the same key, and after every
// write in the slot), then empty.
func (t *labelTally) counts(changes []counters.Change) []statement {
	if !t.on {
		return nil
	}
	adds := labelAdds(changes)
	if len(adds) == 0 {
		return nil
	}
	var names []any
	for i, a := range adds {
		if i == 0 || a.name != adds[i-1].name {
			names = append(names, a.name)
		}
	}
	in := placeholders("?", ", ", len(names))
	q, args := pendingInsert(adds)
	return []statement{
		{"INSERT INTO counter_label_pending (name, at, day, adds) SELECT name, updated_at, label_day, label_slot FROM counter WHERE name IN (" + in + ") AND label_slot IS NOT NULL", names},
		{"UPDATE counter SET label_slot = NULL, label_day = NULL WHERE name IN (" + in + ") AND label_slot IS NOT NULL", names},
		{q, args},
	}
}
