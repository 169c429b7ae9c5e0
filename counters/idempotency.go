package counters

import (
	"context"
	"errors"
	"time"
)

// MaxIdempotencyKeyLen is the longest Idempotency key, in bytes.
const MaxIdempotencyKeyLen = 255

// IdempotencyRetention is how long a key and its first answer are kept: a
// repeat within it is answered from the record, a later one runs anew.
const IdempotencyRetention = 24 * time.Hour

// Idempotency names one logical request that a client may send more than
// once: Key is the client's key, Fingerprint a digest of the request it came
// with, so that reusing a key for another request can be refused. Owner is
// the API key that sent it (0: the admin token): keys are namespaced by
// their owner, so one API key's recorded answer is never replayed to
// another. The HTTP layer sets Owner from the caller it authenticated.
type Idempotency struct {
	Owner       int64
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

// Keyed requests fail the way their unkeyed forms do. A refusal of the
// change by the counter as it stands (EOUTOFRANGE: a bound or the 64-bit
// range; ECONFLICT: a create-only set of a counter that exists) is the
// request's answer and is recorded like a result; any other failure (bad
// input, the database) is not, and the key stays free, so a retry is
// evaluated anew. A repeat of a recorded request changes nothing and
// returns the recorded result with replayed set, or the recorded refusal,
// whose chain holds ErrReplayed: the caller renders it as it rendered the
// first answer. The same key with another fingerprint is ECONFLICT. A
// request whose key is in use by one still in flight waits for it to end.
// The methods below are in the Service interface.

// ErrReplayed marks a refusal that was recorded for an earlier request
// with the same key (errors.Is): this request changed nothing.
var ErrReplayed = errors.New("counters: the recorded answer of an earlier request with this Idempotency-Key")

// OnceStore is what a backend does for idempotent writes: Increment, Set and
// Batch under a key, each recording its result with the key in the change's
// transaction (see Service.IncrementOnce).
type OnceStore interface {
	IncrementOnce(ctx context.Context, key Idempotency, name string, by int64) (value int64, replayed bool, err error)
	SetOnce(ctx context.Context, key Idempotency, req SetRequest) (c *Counter, created, replayed bool, err error)
	BatchOnce(ctx context.Context, key Idempotency, items []Increment) (values []int64, replayed bool, err error)
}

// errNoOnce is the error of the idempotent methods of a service whose
// backend has no OnceStore: a wiring mistake, not a client's.
func errNoOnce() error { return Errorf(EINTERNAL, "idempotent writes are not wired") }

func (s *service) IncrementOnce(ctx context.Context, key Idempotency, name string, by int64) (int64, bool, error) {
	if err := s.checkOnce(key, name); err != nil {
		return 0, false, err
	}
	return s.once.IncrementOnce(ctx, key, name, by)
}

// checkOnce checks an idempotent increment's key and name, and that the
// backend takes idempotent writes.
func (s *service) checkOnce(key Idempotency, name string) error {
	if err := key.Validate(); err != nil {
		return err
	}
	if err := ValidateName(name); err != nil {
		return err
	}
	if s.once == nil {
		return errNoOnce()
	}
	return nil
}

func (s *service) SetOnce(ctx context.Context, key Idempotency, req SetRequest) (*Counter, bool, bool, error) {
	if err := key.Validate(); err != nil {
		return nil, false, false, err
	}
	if err := req.Validate(); err != nil {
		return nil, false, false, err
	}
	if s.once == nil {
		return nil, false, false, errNoOnce()
	}
	return s.once.SetOnce(ctx, key, req)
}

func (s *service) BatchOnce(ctx context.Context, key Idempotency, items []Increment) ([]int64, bool, error) {
	if err := key.Validate(); err != nil {
		return nil, false, err
	}
	if err := ValidateBatch(items); err != nil {
		return nil, false, err
	}
	if s.once == nil {
		return nil, false, errNoOnce()
	}
	return s.once.BatchOnce(ctx, key, items)
}
