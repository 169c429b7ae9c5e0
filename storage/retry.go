package storage

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// retryPolicy says how often, and after which pauses, retry runs work
// again.
type retryPolicy struct {
	attempts  int           // runs in all, the first one included, when ctx has no deadline
	basePause time.Duration // the pause after the first failure is up to this long
	maxPause  time.Duration // no pause is longer
}

// rolledBack is the package's one retry policy, for work that failed
// because it met concurrent work and was rolled back: a deadlock (1213),
// a lock wait timeout (1205), or errAgain. Such work changed nothing, so
// running it again is safe and the client never sees the collision.
//
// On one server a collision is rare and the second run succeeds. On a
// multi-writer cluster (Galera) every node commits optimistically and the
// loser of a conflict on one row gets 1213 at commit: with one service per
// node and one hot counter that is every other statement, and the same
// statements meet again unless they wait. So a request keeps trying as long
// as its deadline allows, pausing at random for up to maxPause; only work
// without a deadline stops after attempts runs.
var rolledBack = retryPolicy{attempts: 8, basePause: time.Millisecond, maxPause: 32 * time.Millisecond}

// errAgain asks retry to run the work once more, for example because
// another transaction created a row this one meant to create.
var errAgain = errors.New("storage: run the transaction again")

// retryable reports a failure that left nothing changed and that running
// the work again resolves. After a deadlock InnoDB has rolled back the whole
// transaction; after a lock wait timeout only the statement, and the caller
// rolls back the rest (inTx does) or had none (a single autocommit
// statement, which a deadlock also rolls back whole). Galera reports a
// transaction that lost certification at commit as a deadlock too, after
// rolling it back whole.
func retryable(err error) bool {
	n := mysqlErrNumber(err)
	return n == erLockDeadlock || n == erLockWaitTimeout || errors.Is(err, errAgain)
}

// retry runs fn under the rolledBack policy until it succeeds or fails in a
// way that is not retryable, whose error it returns as it is. Between runs
// it pauses at random, up to twice as long each time, so that the work that
// collided does not meet again at once. When the next pause would outlast
// ctx's deadline (or, without one, the attempts run out), it gives up with
// an EUNAVAILABLE error that says nothing was changed: every run so far was
// rolled back.
func retry(ctx context.Context, op string, fn func() error) error {
	p := rolledBack
	deadline, bounded := ctx.Deadline()
	var err error
	for attempt := 0; ; attempt++ {
		err = fn()
		if !retryable(err) {
			return err
		}
		if !bounded && attempt+1 == p.attempts {
			return counters.Wrap(counters.EUNAVAILABLE, op, err,
				"Too many concurrent changes of the same counters; nothing was changed. Try again.")
		}
		ceiling := p.maxPause
		if attempt < 16 {
			ceiling = min(p.basePause<<attempt, p.maxPause)
		}
		pause := ceiling/2 + rand.N(ceiling/2+1)
		if bounded && time.Until(deadline) < pause {
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

// execRetried runs one autocommit statement under retry: a statement that
// collided was rolled back whole, so it runs again.
func execRetried(ctx context.Context, db *sql.DB, op, query string, args ...any) (sql.Result, error) {
	var res sql.Result
	err := retry(ctx, op, func() (err error) {
		res, err = db.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

// retryTx is retry of a transaction of db: fn runs in a READ COMMITTED
// transaction (inTx), so that each attempt starts afresh. No gap locks,
// so two creators of one missing counter meet at the primary key instead
// of deadlocking.
func retryTx(ctx context.Context, db *sql.DB, op string, fn func(tx *sql.Tx) error) error {
	return retry(ctx, op, func() error { return inTx(ctx, db, sql.LevelReadCommitted, fn) })
}
