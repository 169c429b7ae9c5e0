package app_test

import (
	"database/sql"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/wire"
)

// An increment that MySQL holds (another transaction has its row locked)
// ends with 503 unavailable at the request's deadline (COUNTERS_MYSQL_TIMEOUT,
// shared by the requests of one step: deadline.Shared), the first in its
// round's statement and the others in their wait for a round: none waits
// for the 5 s that shared work gets when its callers bring no deadline
// (deadline.Default), nor for the lock.
func TestAnIncrementHeldByALockedRowEnds503AtItsDeadline(t *testing.T) {
	t.Parallel()
	const timeout = 300 * time.Millisecond
	e := apptest.New(t, func(c *wire.Config) { c.MySQL.Timeout = timeout })
	if r := e.Do(t, "POST", "/v1/counters/held/increment", ""); r.Status != 200 {
		t.Fatalf("before the lock: %d %s", r.Status, r.Body)
	}
	db, err := sql.Open("mysql", e.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("SELECT value FROM counter WHERE name = 'held' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			r, err := e.TryDo("POST", "/v1/counters/held/increment", "")
			took := time.Since(start)
			switch {
			case err != nil:
				t.Error(err)
			case r.Status != 503 || r.ErrorCode() != "unavailable":
				t.Errorf("while the row is locked: %d %s, want 503 unavailable", r.Status, r.Body)
			case took > timeout+1500*time.Millisecond:
				t.Errorf("a request took %v with a deadline of %v", took, timeout)
			}
		}()
	}
	wg.Wait()
	tx.Rollback()
	e.WaitRecovered(t, "/v1/counters/held/increment")
}
