package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/countersvc/countersvc/counters"
)

var deadlock = &mysql.MySQLError{Number: erLockDeadlock, Message: "Deadlock found when trying to get lock"}

// failing returns work that fails with err its first n runs, and counts
// its runs.
func failing(n int, err error) (fn func() error, runs *int) {
	runs = new(int)
	return func() error {
		*runs++
		if *runs <= n {
			return err
		}
		return nil
	}, runs
}

func TestRetryRunsRolledBackWorkAgainUntilItSucceeds(t *testing.T) {
	t.Parallel()
	for _, err := range []error{deadlock, &mysql.MySQLError{Number: erLockWaitTimeout}, errAgain} {
		fn, runs := failing(3, err)
		if got := retry(context.Background(), "test", fn); got != nil {
			t.Fatalf("after %v: %v, want success", err, got)
		}
		if got, want := *runs, 4; got != want {
			t.Fatalf("after %v: %d runs, want %d", err, got, want)
		}
	}
}

func TestRetryReturnsOtherErrorsAsTheyAreAfterOneRun(t *testing.T) {
	t.Parallel()
	refused := &mysql.MySQLError{Number: erDataOutOfRange}
	fn, runs := failing(10, refused)
	if got := retry(context.Background(), "test", fn); got != refused {
		t.Fatalf("retry = %v, want the error itself", got)
	}
	if got, want := *runs, 1; got != want {
		t.Fatalf("%d runs, want %d", got, want)
	}
}

func TestRetryGivesUpAfterThePolicysAttemptsSayingNothingChanged(t *testing.T) {
	t.Parallel()
	fn, runs := failing(1000, deadlock)
	err := retry(context.Background(), "test", fn)
	if got, want := *runs, rolledBack.attempts; got != want {
		t.Fatalf("%d runs, want %d", got, want)
	}
	if got, want := counters.ErrorCode(err), counters.EUNAVAILABLE; got != want {
		t.Fatalf("code %q (%v), want %q", got, err, want)
	}
	if got, want := counters.ErrorMessage(err), "Too many concurrent changes of the same counters; nothing was changed. Try again."; got != want {
		t.Fatalf("message %q, want %q", got, want)
	}
	if !errors.Is(err, deadlock) {
		t.Fatalf("%v does not carry its cause", err)
	}
}

// A pause that would outlast the deadline is not taken: the caller hears at
// once, while its client still listens, that nothing was changed. The
// answer carries the collision, not the deadline: one that began the pause
// would have ended with the context (a bound on the time it took could not
// tell, the deadline being shorter than the pause, and a loaded machine
// stretched it past 50 ms).
func TestRetryStopsBeforeAPauseThatWouldOutlastTheDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Microsecond)
	defer cancel()
	fn, runs := failing(1000, deadlock)
	err := retry(ctx, "test", fn)
	if !errors.Is(err, deadlock) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("retry = %v, want the collision as its cause: the pause was begun", err)
	}
	if got := *runs; got != 1 {
		t.Fatalf("%d runs, want 1", got)
	}
	if got, want := counters.ErrorMessage(err), "The request ran out of time waiting for concurrent changes; nothing was changed."; got != want {
		t.Fatalf("message %q (%v), want %q", got, err, want)
	}
}

// Work that is not retried, such as a single DELETE, also says that a
// deadlock changed nothing.
func TestARolledBackWriteSaysNothingWasChanged(t *testing.T) {
	t.Parallel()
	for _, err := range []error{deadlock, &mysql.MySQLError{Number: erLockWaitTimeout}} {
		got := mapError("test", err, true)
		if code, msg := counters.ErrorCode(got), counters.ErrorMessage(got); code != counters.EUNAVAILABLE ||
			msg != "The change collided with concurrent changes; nothing was changed. Try again." {
			t.Errorf("mapError(%v) = %q %q, want unavailable and nothing changed", err, code, msg)
		}
	}
}

// On a multi-writer cluster the same statements may collide many times in a
// row: with a deadline, retry keeps going past the policy's attempts for
// as long as the deadline allows.
func TestRetryKeepsRunningRolledBackWorkWhileTheDeadlineAllows(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	failures := 3 * rolledBack.attempts
	fn, runs := failing(failures, deadlock)
	if err := retry(ctx, "test", fn); err != nil {
		t.Fatalf("retry = %v, want success after %d collisions", err, failures)
	}
	if got, want := *runs, failures+1; got != want {
		t.Fatalf("%d runs, want %d", got, want)
	}
}
