package counters

import (
	"context"
	"time"
)

// MaxIdempotencyKeyLen is the longest Idempotency key, in bytes.
const MaxIdempotencyKeyLen = 255

// IdempotencyRetention is how long a key and its first answer are kept: a
// repeat within it is answered from the record, a later one runs anew.
const IdempotencyRetention = 24 * time.Hour

// Idempotency names one logical request that a client may send more than
// once: Key is the client's key, Fingerprint a digest of the request it came
// with, so that reusing a key for another request can be refused.
type Idempotency struct {
	Key         string
	Fingerprint [32]byte
}

// Validate returns EINVALID unless the key is 1 to 255 printable ASCII
// characters.
func (k Idempotency) Validate() error {
	if k.Key == "" || len(k.Key) > MaxIdempotencyKeyLen {
		return Errorf(EINVALID, "Idempotency-Key must be 1 to %d characters long.", MaxIdempotencyKeyLen)
	}
	for i := 0; i < len(k.Key); i++ {
		if k.Key[i] < 0x20 || k.Key[i] > 0x7e {
			return Errorf(EINVALID, "Idempotency-Key must contain only printable ASCII characters.")
		}
	}
	return nil
}

// Answer is a keyed request's first successful answer as its caller renders
// it (for the HTTP layer: a status and a body). The domain never looks
// inside: it stores the answer with the key, in the transaction of the
// change, and hands it back verbatim for every repeat.
type Answer struct {
	Status int
	Body   []byte
	// Replayed is set when the answer comes from the record of an earlier
	// request rather than from this one's change. It is not stored.
	Replayed bool
}

// Renderers turn a keyed change's result into the Answer to store. They run
// inside the change's transaction, possibly more than once when the
// transaction is retried, so they must not have side effects.
type (
	RenderValue func(value int64) (Answer, error)
	RenderSet   func(c *Counter, created bool) (Answer, error)
	RenderBatch func(values []int64) (Answer, error)
)

// Keyed requests fail the way their unkeyed forms do, and a failure is not
// recorded: the key stays free, so a retry is evaluated anew. A repeat of a
// recorded request returns the recorded Answer with Replayed set and
// changes nothing; the same key with another fingerprint is ECONFLICT. A
// request whose key is in use by one still in flight waits for it to end.
// The methods below are in the Service interface.

func (s *service) IncrementOnce(ctx context.Context, key Idempotency, name string, by int64, render RenderValue) (Answer, error) {
	if err := key.Validate(); err != nil {
		return Answer{}, err
	}
	if err := ValidateName(name); err != nil {
		return Answer{}, err
	}
	return s.store.IncrementOnce(ctx, key, name, by, render)
}

func (s *service) SetOnce(ctx context.Context, key Idempotency, req SetRequest, render RenderSet) (Answer, error) {
	if err := key.Validate(); err != nil {
		return Answer{}, err
	}
	if err := req.Validate(); err != nil {
		return Answer{}, err
	}
	return s.store.SetOnce(ctx, key, req, render)
}

func (s *service) BatchOnce(ctx context.Context, key Idempotency, items []Increment, render RenderBatch) (Answer, error) {
	if err := key.Validate(); err != nil {
		return Answer{}, err
	}
	if err := ValidateBatch(items); err != nil {
		return Answer{}, err
	}
	return s.store.BatchOnce(ctx, key, items, render)
}
