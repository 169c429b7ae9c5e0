package storage

import (
	"database/sql"
	"errors"
	"net"

	"github.com/go-sql-driver/mysql"

	"github.com/countersvc/countersvc/counters"
)

// MySQL error numbers the storage code gives a meaning to.
const (
	erDupEntry           = 1062
	erNoSuchTable        = 1146
	erBadNull            = 1048 // a counter statement's way of refusing a step (a bound; the history slot, a quiet range: see refused)
	erWarnDataOutOfRange = 1264
	erDataOutOfRange     = 1690
	erLockWaitTimeout    = 1205
	erLockDeadlock       = 1213
	erConCount           = 1040
	erServerShutdown     = 1053
	erQueryInterrupted   = 1317
	erConnectionKilled   = 1927
	// erUnknownComError is how a Galera node that is not part of the
	// cluster's primary component (cut off, or still joining) refuses every
	// statement: "WSREP has not yet prepared node for application use".
	erUnknownComError = 1047
)

func mysqlErrNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

func isDuplicate(err error) bool { return mysqlErrNumber(err) == erDupEntry }

// mapError turns a driver error into a domain error with a client-safe
// message; the cause stays inside for the log. write says whether the
// statement may have changed something, which the 503 message must admit.
func mapError(op string, err error, write bool) error {
	if err == nil {
		return nil
	}
	var de *counters.Error
	if errors.As(err, &de) {
		return err
	}
	switch mysqlErrNumber(err) {
	case erDataOutOfRange, erWarnDataOutOfRange:
		return counters.Wrap(counters.EOUTOFRANGE, op, err, "The result would leave the signed 64-bit range; nothing was changed.")
	case erBadNull:
		return counters.Wrap(counters.EOUTOFRANGE, op, err, "The result would break the counter's bounds; nothing was changed.")
	case erLockWaitTimeout, erLockDeadlock:
		// Rolled back (see retryable), and not run again by retry here.
		return counters.Wrap(counters.EUNAVAILABLE, op, err, "The change collided with concurrent changes; nothing was changed. Try again.")
	case erConCount, erServerShutdown, erQueryInterrupted, erConnectionKilled:
		return unavailable(op, err, write)
	case erUnknownComError:
		return unavailable(op, err, false) // refused before it ran
	case 0:
		if errors.Is(err, sql.ErrNoRows) {
			return counters.Wrap(counters.ENOTFOUND, op, err, "Not found.")
		}
		// Anything that is not a server error is the connection failing:
		// refused, reset, timed out, or the request's deadline.
		return unavailable(op, err, write)
	}
	return counters.Wrap(counters.EINTERNAL, op, err, "")
}

func unavailable(op string, err error, write bool) error {
	msg := "The database cannot be reached; nothing was changed."
	var ne *net.OpError
	if write && !(errors.As(err, &ne) && ne.Op == "dial") {
		msg = "The database cannot be reached; the change may or may not have been applied."
	}
	return counters.Wrap(counters.EUNAVAILABLE, op, err, msg)
}
