package storage

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"time"

	"countersvc/counters"
)

// retryPolicy says how often, and after which pauses, retry runs work
// again.
type retryPolicy struct {
	attempts  int           // runs in all, the first one included
	basePause time.Duration // the pause after the first failure is up to this long
	maxPause  time.Duration // no pause is longer
}

// rolledBack is the package's one retry policy, for work that failed
// because it met concurrent work and was rolled back: a deadlock (1213),
// a lock wait timeout (1205), or errAgain. Such work changed nothing, so
// running it again is safe and the client never sees the collision.
var rolledBack = retryPolicy{attempts: 8, basePause: time.Millisecond, maxPause: 32 * time.Millisecond}

// errAgain asks retry to run the work once more, for example because
// another transaction created a row this one meant to create.
var errAgain = errors.New("storage: run the transaction again")

// retryable reports a failure that left nothing changed and that running
// the work again resolves. After a deadlock InnoDB has rolled back the whole
// transaction; after a lock wait timeout only the statement, and the caller
// rolls back the rest (inTx does) or had none (a single autocommit
// statement, which a deadlock also rolls back whole).
func retryable(err error) bool {
	n := mysqlErrNumber(err)
	return n == erLockDeadlock || n == erLockWaitTimeout || errors.Is(err, errAgain)
}

// retry runs fn under the rolledBack policy until it succeeds or fails in a
// way that is not retryable, whose error it returns as it is. Between runs
// it pauses at random, up to twice as long each time, so that the work that
// collided does not meet again at once. When the attempts run out, or the
// next pause would outlast ctx's deadline, it gives up with an EUNAVAILABLE
// error that says nothing was changed: every run so far was rolled back.
func retry(ctx context.Context, op string, fn func() error) error {
	p := rolledBack
	var err error
	for attempt := 0; ; attempt++ {
		err = fn()
		if !retryable(err) {
			return err
		}
		if attempt+1 == p.attempts {
			return counters.Wrap(counters.EUNAVAILABLE, op, err,
				"Too many concurrent changes of the same counters; nothing was changed. Try again.")
		}
		ceiling := min(p.basePause<<attempt, p.maxPause)
		pause := ceiling/2 + rand.N(ceiling/2+1)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < pause {
			return outOfTime(op, err)
		}
		select {
		case <-ctx.Done():
			return outOfTime(op, ctx.Err())
		case <-time.After(pause):
		}
	}
}

func outOfTime(op string, err error) error {
	return counters.Wrap(counters.EUNAVAILABLE, op, err,
		"The request ran out of time waiting for concurrent changes; nothing was changed.")
}

// retryTx is retry of a transaction: fn runs in inTx, so that each attempt
// starts afresh.
func (s *CounterStore) retryTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	return retry(ctx, op, func() error { return s.inTx(ctx, fn) })
}
