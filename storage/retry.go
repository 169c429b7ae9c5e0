package storage

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"time"

	"countersvc/counters"
)

// maxAttempts bounds how often withRetry runs a transaction.
const maxAttempts = 8

// errAgain asks withRetry to run the whole transaction once more, for
// example because another transaction created a row this one meant to
// create.
var errAgain = errors.New("storage: run the transaction again")

// withRetry runs fn in a transaction (see inTx) and runs it again when it
// failed with a deadlock, a lock wait timeout or errAgain: InnoDB rolled all
// of it back, so a rerun is safe, and the client never sees the collision.
func (s *CounterStore) withRetry(ctx context.Context, fn func(tx *sql.Tx) error) error {
	var err error
	for attempt := 0; attempt < maxAttempts; attempt++ {
		err = s.inTx(ctx, fn)
		if !isRetryable(err) && !errors.Is(err, errAgain) {
			return err
		}
		// A short random pause, so that the transactions that collided
		// do not meet again at once.
		pause := time.Duration(1+rand.IntN(1<<min(attempt, 5))) * time.Millisecond
		select {
		case <-ctx.Done():
			return counters.Wrap(counters.EUNAVAILABLE, "storage.withRetry", ctx.Err(),
				"The request ran out of time waiting for concurrent changes; nothing was changed.")
		case <-time.After(pause):
		}
	}
	return counters.Wrap(counters.EUNAVAILABLE, "storage.withRetry", err,
		"Too many concurrent changes of the same counters; nothing was changed. Try again.")
}
