package storage

import (
	"context"
	"database/sql/driver"
	"fmt"
)

// endedConnector hands out connections that database/sql discards, rather
// than pools, once a COMMIT or ROLLBACK of theirs has failed, so that the
// server rolls back what that left open when the connection closes.
//
// A server may refuse the statement that ends a transaction and keep the
// transaction open: a Galera node outside the primary component refuses
// COMMIT with 1047 "WSREP has not yet prepared node for application use"
// and the session stays in the transaction (measured on MariaDB 10.11).
// database/sql pools the connection all the same, and the next request's
// START TRANSACTION on it, once the node is back, commits the change
// implicitly: the request that was told "nothing was changed" (see
// mapError) changed something after all.
//
// The sql.Conn exchanges of the increments end their transactions
// themselves and discard a connection whose ROLLBACK fails (see rollback).
type endedConnector struct{ driver.Connector }

// mysqlConn is what database/sql uses of go-sql-driver's connection.
type mysqlConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

func (c endedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	mc, ok := dc.(mysqlConn)
	if !ok {
		dc.Close()
		return nil, fmt.Errorf("storage: the MySQL driver's connection (%T) lacks a method database/sql uses", dc)
	}
	return &endedConn{mysqlConn: mc}, nil
}

// endedConn is a connection and, while one is open, its transaction: a
// transaction costs no allocation of its own.
type endedConn struct {
	mysqlConn
	tx     driver.Tx
	failed bool // a COMMIT or ROLLBACK failed: the transaction may be open still
}

func (c *endedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := c.mysqlConn.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	c.tx = tx
	return c, nil
}

// Begin is BeginTx for database/sql before Go 1.8's contexts; it never
// calls it, as the connection has BeginTx.
func (c *endedConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *endedConn) Commit() error   { return c.end(c.tx.Commit) }
func (c *endedConn) Rollback() error { return c.end(c.tx.Rollback) }

func (c *endedConn) end(f func() error) error {
	c.tx = nil
	err := f()
	if err != nil {
		c.failed = true
	}
	return err
}

// IsValid is asked when database/sql is about to pool the connection.
func (c *endedConn) IsValid() bool { return !c.failed && c.mysqlConn.IsValid() }

func (c *endedConn) ResetSession(ctx context.Context) error {
	if c.failed {
		return driver.ErrBadConn
	}
	return c.mysqlConn.ResetSession(ctx)
}
