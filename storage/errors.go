package storage

import (
	"database/sql"
	"database/sql/driver"
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
	// erErrorDuringCommit is how a Galera node reports a write set it could
	// not certify for a reason other than a conflict, most often "Not
	// connected to Primary Component": the node left the primary component
	// while the transaction was committing. (MariaDB words every such error
	// "Error while appending streaming replication fragment", streaming
	// replication or not.)
	erErrorDuringCommit = 1180
	// A server in read-only mode (the old primary of a failover, a replica
	// behind a proxy that has not switched yet) refuses a write with these.
	erOptionPreventsStatement = 1290
	erReadOnlyMode            = 1836
)

func mysqlErrNumber(err error) uint16 {
	if err == nil {
		return 0 // before errors.As, whose target would escape: an allocation per statement
	}
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
// The errors of a database that is away, failing over or cut off from its
// cluster are 503s, never a 500: docs/running-more-than-one.md has the
// table of which say "nothing was changed" and why.
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
		// Rolled back (see retryable), and not run again by retry here. On
		// Galera these are also a write set that lost certification (1213)
		// and a wsrep_sync_wait that timed out before the statement ran
		// (1205).
		return counters.Wrap(counters.EUNAVAILABLE, op, err, "The change collided with concurrent changes; nothing was changed. Try again.")
	case erServerShutdown, erQueryInterrupted, erConnectionKilled:
		return unavailable(op, err, write)
	case erErrorDuringCommit:
		// At COMMIT the node may have sent the write set to the cluster
		// before it lost it: the others may have committed it, and the node
		// gets it back when it rejoins. Unknown, for a write.
		return unavailable(op, err, write)
	case erConCount, erUnknownComError, erOptionPreventsStatement, erReadOnlyMode:
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

// unavailable is the 503 of a database that cannot be reached. Its message
// says "nothing was changed" only where nothing was sent: a read (write is
// false), a connection that failed to open, or driver.ErrBadConn, which
// go-sql-driver returns only when it wrote nothing to the server (a pooled
// connection found dead, say after the node restarted) or the server
// refused a write as read-only. Any other failure of an established
// connection (mysql.ErrInvalidConn, io.EOF, a reset, the deadline) may come
// after the server ran the statement or committed.
func unavailable(op string, err error, write bool) error {
	msg := "The database cannot be reached; nothing was changed."
	var ne *net.OpError
	if write && !(errors.As(err, &ne) && ne.Op == "dial") && !errors.Is(err, driver.ErrBadConn) {
		msg = "The database cannot be reached; the change may or may not have been applied."
	}
	return counters.Wrap(counters.EUNAVAILABLE, op, err, msg)
}
