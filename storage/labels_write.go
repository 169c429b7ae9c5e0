package storage

import (
	"context"
	"encoding/binary"
	"slices"
	"strings"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
)

// The write side of breakdowns (migrations/012_counter_label.up.sql and
// 013): the labels of an increment's steps (counters.Part.Labels) are
// written in the same transaction as the value and its history, after
// both are locked, as one row per counter and UTC day in
// counter_label_pending: what the steps add to each value, packed (see
// packAdds). One statement per transaction however many increments it
// carries (a coalesced round of 1,000 labelled page hits is one row).
// Unlabelled steps write nothing here: the hot single increment keeps its
// one statement.
//
// The bound (a counter keeps at most LabelValues distinct values per label
// and day, the rest count as counters.LabelOther) is decided later, when
// the rows are settled (labels_settle.go), in the order the counter's
// writes committed. Deciding it here made every labelled round upsert a
// row per distinct value, each counted against its day's values, while it
// held the counter's row lock: a hot page's rounds took four times as long
// as unlabelled ones, one after another.

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
// summed where the sum fits in an int64; else they stay two entries,
// which settling adds.
func labelAdds(changes []counters.Change) []labelAdd {
	type key struct {
		name, label, value string
		day                time.Time
	}
	at := map[key]int{}
	var adds []labelAdd
	for _, c := range changes {
		for _, p := range c.Steps {
			if p.By == 0 || len(p.Labels) == 0 {
				continue
			}
			day, _ := history.QuarterOf(p.At)
			for k, v := range p.Labels {
				i, ok := at[key{c.Name, k, v, day}]
				if ok {
					if sum, fits := counters.Add(adds[i].by, p.By); fits {
						adds[i].by = sum
						continue
					}
				}
				at[key{c.Name, k, v, day}] = len(adds)
				adds = append(adds, labelAdd{name: c.Name, label: k, day: day, value: v, by: p.By})
			}
		}
	}
	slices.SortStableFunc(adds, func(a, b labelAdd) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := a.day.Compare(b.day); c != 0 {
			return c
		}
		if c := strings.Compare(a.label, b.label); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
	return adds
}

// packAdds packs adds, all of one counter and day, into a pending row's
// adds: for each, the label and the value, each as its length (a
// uvarint) and its bytes, then the step (a varint). Rows so packed may
// be concatenated.
func packAdds(adds []labelAdd) []byte {
	n := 0
	for _, a := range adds {
		n += len(a.label) + len(a.value) + 2*binary.MaxVarintLen16 + binary.MaxVarintLen64
	}
	b := make([]byte, 0, n)
	for _, a := range adds {
		b = binary.AppendUvarint(b, uint64(len(a.label)))
		b = append(b, a.label...)
		b = binary.AppendUvarint(b, uint64(len(a.value)))
		b = append(b, a.value...)
		b = binary.AppendVarint(b, a.by)
	}
	return b
}

// unpackAdds calls fn with each add of a pending row, in the order packed.
func unpackAdds(b []byte, fn func(label, value string, by int64)) error {
	bad := counters.Errorf(counters.EINTERNAL, "storage: a pending label row is not packed as packAdds packs")
	str := func() (string, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return "", false
		}
		s := string(b[k : k+int(n)])
		b = b[k+int(n):]
		return s, true
	}
	for len(b) > 0 {
		label, ok := str()
		if !ok {
			return bad
		}
		value, ok := str()
		if !ok {
			return bad
		}
		by, k := binary.Varint(b)
		if k <= 0 {
			return bad
		}
		b = b[k:]
		fn(label, value, by)
	}
	return nil
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

// labelsOf is the statement that adds changes' labels, "" when there are
// none or breakdowns are off.
func (s *CounterStore) labelsOf(changes []counters.Change) (string, []any) {
	if !s.Labels {
		return "", nil
	}
	return pendingInsert(labelAdds(changes))
}

// countsOf are the statements that count changes' steps beside their
// values, in the order every writer takes their locks: history, then
// labels.
func (s *CounterStore) countsOf(changes []counters.Change) []statement {
	var out []statement
	if q, args := s.historyOf(changes); q != "" {
		out = append(out, statement{q, args})
	}
	if q, args := s.labelsOf(changes); q != "" {
		out = append(out, statement{q, args})
	}
	return out
}

// labelled reports whether any of incs carries labels that the store
// counts: such a write goes the transactional way.
func (s *CounterStore) labelled(incs []counters.Increment) bool {
	if !s.Labels {
		return false
	}
	return slices.ContainsFunc(incs, func(inc counters.Increment) bool {
		if len(inc.Labels) > 0 && inc.Parts == nil {
			return true
		}
		return slices.ContainsFunc(inc.Parts, func(p counters.Part) bool { return len(p.Labels) > 0 })
	})
}

// addCounts runs countsOf inside the transaction ex, which has locked the
// changes' counters.
func (s *CounterStore) addCounts(ctx context.Context, ex Execer, changes []counters.Change) error {
	for _, st := range s.countsOf(changes) {
		if _, err := ex.ExecContext(ctx, st.query, st.args...); err != nil {
			return err
		}
	}
	return nil
}
