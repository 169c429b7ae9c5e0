package storage

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"
)

// A connection whose COMMIT or ROLLBACK failed is closed, not pooled: the
// server may have kept the transaction open (a Galera node refuses COMMIT
// with 1047 and stays in it), and the next transaction on the connection
// would commit it. One whose transaction ended well is pooled.
func TestAConnectionWhoseTransactionDidNotEndIsClosedNotPooled(t *testing.T) {
	t.Parallel()
	refused := errors.New("WSREP has not yet prepared node for application use")
	for _, tc := range []struct {
		name         string
		commit, roll error
		end          func(*sql.Tx) error
		pooled       bool
	}{
		{"committed", nil, nil, (*sql.Tx).Commit, true},
		{"rolled back", nil, nil, (*sql.Tx).Rollback, true},
		{"COMMIT refused", refused, nil, (*sql.Tx).Commit, false},
		{"ROLLBACK refused", nil, refused, (*sql.Tx).Rollback, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := &fakeConn{commitErr: tc.commit, rollbackErr: tc.roll}
			db := sql.OpenDB(endedConnector{fakeConnector{fc}})
			defer db.Close()
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.end(tx); !errors.Is(err, tc.commit) && !errors.Is(err, tc.roll) {
				t.Fatalf("ending the transaction: %v", err)
			}
			if got := db.Stats().OpenConnections == 1 && !fc.closed; got != tc.pooled {
				t.Errorf("pooled %v (%d open, closed %v), want %v", got, db.Stats().OpenConnections, fc.closed, tc.pooled)
			}
		})
	}
}

type fakeConnector struct{ c *fakeConn }

func (f fakeConnector) Connect(context.Context) (driver.Conn, error) { return f.c, nil }
func (f fakeConnector) Driver() driver.Driver                        { return nil }

// fakeConn is a connection that runs nothing and ends its transactions
// with the errors it is given.
type fakeConn struct {
	commitErr, rollbackErr error
	closed                 bool
}

func (c *fakeConn) Prepare(string) (driver.Stmt, error) { return nil, errors.New("fake") }
func (c *fakeConn) Close() error                        { c.closed = true; return nil }
func (c *fakeConn) Begin() (driver.Tx, error)           { return c, nil }
func (c *fakeConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	return c, nil
}
func (c *fakeConn) PrepareContext(context.Context, string) (driver.Stmt, error) {
	return nil, errors.New("fake")
}
func (c *fakeConn) ExecContext(context.Context, string, []driver.NamedValue) (driver.Result, error) {
	return driver.RowsAffected(0), nil
}
func (c *fakeConn) QueryContext(context.Context, string, []driver.NamedValue) (driver.Rows, error) {
	return nil, errors.New("fake")
}
func (c *fakeConn) Ping(context.Context) error               { return nil }
func (c *fakeConn) ResetSession(context.Context) error       { return nil }
func (c *fakeConn) IsValid() bool                            { return !c.closed }
func (c *fakeConn) CheckNamedValue(*driver.NamedValue) error { return nil }
func (c *fakeConn) Commit() error                            { return c.commitErr }
func (c *fakeConn) Rollback() error                          { return c.rollbackErr }
