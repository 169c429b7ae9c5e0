package counters

import "context"

// Extra is what else a step counts beside its counter's value: a
// breakdown's labels are one kind (breakdowns.Of). It is one opaque value
// that the layers between a caller and the store (the service, the cache,
// the coalescer) carry without knowing it, as database/sql carries a
// driver.NamedValue: the coalescer sums a counter's steps of equal Extra
// into one part, and the store hands each part's to the tally that writes
// it (storage.Tally). So it must be comparable (a string, a struct of
// strings, a pointer), never a map or a slice; nil is none. A new kind
// adds its package, its tally in storage/ and its wiring, and changes
// nothing here.
type Extra any

// IncrementWith is Increment with extra counted beside the step, in the
// same transaction: one Increment carrying it, which the coalescer queues
// as it queues Increment (see Store.IncrementMany). Nil extra makes it
// Increment exactly. The caller has checked extra (it was built by its
// kind's constructor, which validates).
func (s *service) IncrementWith(ctx context.Context, name string, by int64, extra Extra) (int64, error) {
	if extra == nil {
		return s.Increment(ctx, name, by)
	}
	if err := ValidateName(name); err != nil {
		return 0, err
	}
	values, err := s.store.IncrementMany(ctx, []Increment{{Name: name, By: by, Extra: extra}})
	if err != nil {
		return 0, err
	}
	return values[0], nil
}

func (s *service) IncrementWithOnce(ctx context.Context, key Idempotency, name string, by int64, extra Extra) (int64, bool, error) {
	if extra == nil {
		return s.IncrementOnce(ctx, key, name, by)
	}
	if err := s.checkOnce(key, name); err != nil {
		return 0, false, err
	}
	// A batch of one records its value as the increment would; the key's
	// fingerprint tells the two requests apart.
	values, replayed, err := s.once.BatchOnce(ctx, key, []Increment{{Name: name, By: by, Extra: extra}})
	if err != nil {
		return 0, false, err
	}
	return values[0], replayed, nil
}
