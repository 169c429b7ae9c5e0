package storage

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/countersvc/countersvc/counters"
)

// What a client is told when the database, or the Galera node behind it,
// fails: a 503 (unavailable), never a 500, whose message says "nothing was
// changed" only where the server or the driver guarantees it, and "may or
// may not have been applied" for a write whose outcome is unknown.
func TestMapErrorTellsAnOutageFromAnUnknownOutcome(t *testing.T) {
	t.Parallel()
	const (
		nothing = "nothing was changed"
		maybe   = "may or may not have been applied"
	)
	server := func(n uint16) error { return &mysql.MySQLError{Number: n, Message: "from the server"} }
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name          string
		err           error
		read, written string // what the message says after a read, and after a write
	}{
		{"1047: a Galera node outside the primary component refuses the statement", server(1047), nothing, nothing},
		{"1180: a Galera node lost the primary component while committing", server(1180), nothing, maybe},
		{"1213: deadlock or lost certification, rolled back whole", server(1213), nothing, nothing},
		{"1205: lock wait or wsrep_sync_wait timed out, rolled back", server(1205), nothing, nothing},
		{"1040: too many connections, refused at connect", server(1040), nothing, nothing},
		{"1290: a read-only server refuses the write", server(1290), nothing, nothing},
		{"1836: read-only mode", server(1836), nothing, nothing},
		{"1053: the server is shutting down", server(1053), nothing, maybe},
		{"1317: the statement was interrupted", server(1317), nothing, maybe},
		{"1927: the connection was killed", server(1927), nothing, maybe},
		{"driver.ErrBadConn: nothing was sent (a pooled connection found dead)", driver.ErrBadConn, nothing, nothing},
		{"mysql.ErrInvalidConn: the connection broke after the statement was sent", mysql.ErrInvalidConn, nothing, maybe},
		{"io.EOF on an established connection (the node restarted)", io.EOF, nothing, maybe},
		{"io.ErrUnexpectedEOF", io.ErrUnexpectedEOF, nothing, maybe},
		{"a reset connection", reset, nothing, maybe},
		{"a refused connection: never opened", refused, nothing, nothing},
		{"the request's deadline", context.DeadlineExceeded, nothing, maybe},
		{"wrapped: 1180", fmt.Errorf("commit: %w", server(1180)), nothing, maybe},
		{"wrapped: driver.ErrBadConn", fmt.Errorf("begin: %w", driver.ErrBadConn), nothing, nothing},
	} {
		for _, write := range []bool{false, true} {
			want := tc.read
			if write {
				want = tc.written
			}
			err := mapError("test", tc.err, write)
			if got := counters.ErrorCode(err); got != counters.EUNAVAILABLE {
				t.Errorf("%s (write %v): code %q, want %q", tc.name, write, got, counters.EUNAVAILABLE)
				continue
			}
			if msg := counters.ErrorMessage(err); !strings.Contains(msg, want) {
				t.Errorf("%s (write %v): %q, want it to say %q", tc.name, write, msg, want)
			}
			if !errors.Is(err, tc.err) {
				t.Errorf("%s (write %v): the cause is lost for the log: %v", tc.name, write, err)
			}
		}
	}
}

// Only work the server rolled back runs again: an error at COMMIT whose
// outcome is unknown (1180), or a node that is out of the cluster (1047),
// is answered at once.
func TestRetryableIsOnlyWorkTheServerRolledBack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&mysql.MySQLError{Number: erLockDeadlock}, true},
		{&mysql.MySQLError{Number: erLockWaitTimeout}, true},
		{&mysql.MySQLError{Number: erErrorDuringCommit}, false},
		{&mysql.MySQLError{Number: erUnknownComError}, false},
		{mysql.ErrInvalidConn, false},
		{driver.ErrBadConn, false},
	} {
		if got := retryable(tc.err); got != tc.want {
			t.Errorf("retryable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
