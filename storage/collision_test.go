package storage_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/tickets"
)

// Every write, single statements included, outlasts a collision: held up
// by another transaction's lock past innodb_lock_wait_timeout (1 s here),
// it gets error 1205, which rolled the statement back, and runs again
// within its deadline instead of answering 503. The same retry serves the
// deadlocks of one server and the lost certifications of a Galera cluster
// (error 1213, see internal/clustertest).
func TestWritesHeldPastTheLockWaitTimeoutRunAgainWithinTheirDeadline(t *testing.T) {
	t.Parallel()
	cfg, err := mysql.ParseDSN(storetest.MigratedDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Params = map[string]string{"innodb_lock_wait_timeout": "1"}
	dsn := cfg.FormatDSN()
	store, db := storetest.OpenStore(t, dsn)
	ts := storage.NewTicketStore(db, storage.TicketStoreOptions{})
	ctx := context.Background()
	for _, name := range []string{"inc", "del", "reset", "set", "batch"} {
		set(t, store, name, 1)
	}
	board := &tickets.Board{CompanyID: 1, Slug: "HELD", Title: "t"}
	if err := ts.CreateBoard(ctx, board); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{1, 2} {
		if err := ts.CreateTicket(ctx, &tickets.Ticket{BoardID: board.ID, LocalID: id, Title: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	lockCounter := func(name string) string {
		return fmt.Sprintf("SELECT value FROM counter WHERE name = '%s' FOR UPDATE", name)
	}

	tests := []struct {
		name  string
		lock  string // run by the other transaction, which holds its locks
		write func(ctx context.Context) error
	}{
		{"increment", lockCounter("inc"), func(ctx context.Context) error {
			_, err := store.Increment(ctx, "inc", 1)
			return err
		}},
		{"delete", lockCounter("del"), func(ctx context.Context) error { return store.Delete(ctx, "del") }},
		{"reset", lockCounter("reset"), func(ctx context.Context) error {
			_, err := store.Reset(ctx, counters.ResetRequest{Prefix: "reset", Value: 0})
			return err
		}},
		{"set", lockCounter("set"), func(ctx context.Context) error {
			_, _, err := store.Set(ctx, counters.SetRequest{Name: "set", Value: 7, Min: counters.Bound{Keep: true}, Max: counters.Bound{Keep: true}})
			return err
		}},
		{"batch", lockCounter("batch"), func(ctx context.Context) error {
			_, err := store.Batch(ctx, []counters.Increment{{Name: "batch", By: 2}})
			return err
		}},
		{"board creation", "INSERT INTO board (company_id, slug, title, created_at) VALUES (2, 'SAME', 't', NOW())", func(ctx context.Context) error {
			return ts.CreateBoard(ctx, &tickets.Board{CompanyID: 2, Slug: "SAME", Title: "t"})
		}},
		{"ticket insert", fmt.Sprintf("SELECT id FROM board WHERE id = %d FOR UPDATE", board.ID), func(ctx context.Context) error {
			return ts.CreateTicket(ctx, &tickets.Ticket{BoardID: board.ID, LocalID: 3, Title: "t"})
		}},
		{"ticket delete", fmt.Sprintf("SELECT id FROM ticket WHERE board_id = %d AND local_id = 2 FOR UPDATE", board.ID), func(ctx context.Context) error {
			return ts.DeleteTicket(ctx, board.ID, 2)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			release := holdLocks(t, dsn, tt.lock)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			done := make(chan error, 1)
			start := time.Now()
			go func() { done <- tt.write(ctx) }()
			// Past one lock wait timeout the write has been refused once
			// at least; then the lock goes away.
			time.Sleep(1500 * time.Millisecond)
			release()
			if err := <-done; err != nil {
				t.Fatalf("%s held past the lock wait timeout: %v (code %s)", tt.name, err, counters.ErrorCode(err))
			}
			if elapsed := time.Since(start); elapsed < time.Second {
				t.Fatalf("%s took %v: it did not wait for the lock", tt.name, elapsed)
			}
		})
	}
}

// holdLocks runs lock in a transaction of its own and returns the function
// that rolls it back, releasing the locks.
func holdLocks(t *testing.T, dsn, lock string) (release func()) {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(lock); err != nil {
		tx.Rollback()
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() })
	return func() { tx.Rollback() }
}
