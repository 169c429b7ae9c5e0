package counters

import (
	"context"
	"fmt"
	"time"
)

// MaxBatch is the most increments one batch may carry.
const MaxBatch = 100

// Increment is one item of a batch: add By to the counter Name.
type Increment struct {
	Name string
	By   int64
	// Parts, when set, says when the steps that make up By happened, for
	// the counter's history (see HistoryGrain): the coalescer sets it when a
	// round carries increments that queued in another quarter hour than the
	// one it runs in. The parts add up to By. Nil: all of By counts now, by
	// the store's clock.
	Parts []Part
	// Extra is what else all of By counts (see Extra), in its
	// transaction. With Parts, each part carries its own and this is
	// ignored. As JSON (a batch's idempotency fingerprint is its items) it
	// keeps the name of its first kind, labels, and is left out when nil,
	// so that keys recorded before stay valid.
	Extra Extra `json:"Labels,omitempty"`
}

// Part is a share of an Increment's By, the time it counts at in the
// counter's history, and the Extra its steps carried (nil: none), counted
// with it at that time.
type Part struct {
	At    time.Time
	By    int64
	Extra Extra `json:"Labels,omitempty"`
}

// HistoryGrain is the finest period history tells apart: every IANA zone's
// hours and midnights fall on quarter hours of UTC (offsets such as +5:30,
// +5:45 and -9:30 included), so hours, days and months are exact in any
// zone. An increment counts in the quarter hour in which the store took it.
const HistoryGrain = 15 * time.Minute

// ValidateBatch returns EINVALID unless there are 1 to MaxBatch items with
// valid names; the message names the first bad item. An item's Extra was
// checked by its kind's constructor.
func ValidateBatch(items []Increment) error {
	if len(items) == 0 || len(items) > MaxBatch {
		return Errorf(EINVALID, "A batch carries 1 to %d increments, not %d.", MaxBatch, len(items))
	}
	for i, it := range items {
		if err := ValidateName(it.Name); err != nil {
			return ItemError(i, it.Name, err)
		}
	}
	return nil
}

// ItemError prefixes err's message with the batch item it is about, keeping
// its code. The name is quoted only when it is a valid one, so that a huge or
// broken name is not echoed back.
func ItemError(i int, name string, err error) *Error {
	label := fmt.Sprintf("increments[%d]", i)
	if ValidateName(name) == nil {
		label += fmt.Sprintf(" (%q)", name)
	}
	return &Error{Code: ErrorCode(err), Message: label + ": " + ErrorMessage(err), Err: err}
}

func (s *service) Batch(ctx context.Context, items []Increment) ([]int64, error) {
	if err := ValidateBatch(items); err != nil {
		return nil, err
	}
	return s.store.Batch(ctx, items)
}
