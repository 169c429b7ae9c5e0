package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/tickets"
)

type ticketEnv struct {
	db    *storage.DB
	store *storage.TicketStore
}

func newTicketEnv(tb testing.TB, o storage.TicketStoreOptions) *ticketEnv {
	tb.Helper()
	db, err := storage.Open(context.Background(), storetest.MigratedDSN(tb), storage.Options{MaxOpenConns: 16})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	store := storage.NewTicketStore(db, o)
	return &ticketEnv{db: db, store: store}
}

func (e *ticketEnv) board(tb testing.TB, company int64, slug string) int64 {
	tb.Helper()
	b := &tickets.Board{CompanyID: company, Slug: slug, Title: slug}
	if err := e.store.CreateBoard(context.Background(), b); err != nil {
		tb.Fatal(err)
	}
	return b.ID
}

// holdBoard locks the board's row as a writer would. Every ticket insert
// checks its board (the foreign key) and so waits until the returned
// function releases the lock: the test decides when the statement in
// flight may finish, and what queues meanwhile.
func (e *ticketEnv) holdBoard(tb testing.TB, boardID int64) (release func()) {
	tb.Helper()
	tx, err := e.db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	var id int64
	if err := tx.QueryRow("SELECT id FROM board WHERE id = ? FOR UPDATE", boardID).Scan(&id); err != nil {
		tx.Rollback()
		tb.Fatal(err)
	}
	var once sync.Once
	release = func() { once.Do(func() { tx.Rollback() }) }
	tb.Cleanup(release)
	return release
}

// waitStats polls the group commit until ok holds; it synchronises the
// test with the inserter and asserts nothing about speed.
func (e *ticketEnv) waitStats(tb testing.TB, what string, ok func(storage.InsertStats) bool) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok(e.store.InsertStats()) {
		if time.Now().After(deadline) {
			tb.Fatalf("waiting for %s: stats %+v", what, e.store.InsertStats())
		}
		time.Sleep(time.Millisecond)
	}
}

// eachInsertPath runs a test once per way of learning the ids of a
// multi-row insert: RETURNING (MariaDB) and a read in the same transaction
// (MySQL).
func eachInsertPath(t *testing.T, o storage.TicketStoreOptions, test func(t *testing.T, e *ticketEnv)) {
	for _, path := range []struct {
		name    string
		without bool
	}{{"returning", false}, {"insert then read", true}} {
		t.Run(path.name, func(t *testing.T) {
			o.WithoutReturning = path.without
			test(t, newTicketEnv(t, o))
		})
	}
}

type result struct {
	t   *tickets.Ticket
	err error
}

// createAsync starts CreateTicket in a goroutine.
func (e *ticketEnv) createAsync(ctx context.Context, boardID, localID int64) <-chan result {
	ch := make(chan result, 1)
	go func() {
		t := &tickets.Ticket{BoardID: boardID, LocalID: localID, Title: fmt.Sprintf("ticket %d", localID)}
		ch <- result{t, e.store.CreateTicket(ctx, t)}
	}()
	return ch
}

// storedID reads the id of a ticket row straight from the table.
func (e *ticketEnv) storedID(tb testing.TB, boardID, localID int64) int64 {
	tb.Helper()
	var id int64
	err := e.db.QueryRow("SELECT id FROM ticket WHERE board_id = ? AND local_id = ?", boardID, localID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0
	} else if err != nil {
		tb.Fatal(err)
	}
	return id
}

// queueBehindOne writes one ticket that blocks on the held board, then
// queues the others behind it, and returns their results in order.
func (e *ticketEnv) queueBehindOne(tb testing.TB, boardID int64, first int64, others []int64) (<-chan result, []<-chan result) {
	tb.Helper()
	return e.queueBehindOneOn(tb, boardID, first, boardID, others)
}

// queueBehindOneOn is queueBehindOne with the others on another board.
func (e *ticketEnv) queueBehindOneOn(tb testing.TB, boardID, first, othersBoard int64, others []int64) (<-chan result, []<-chan result) {
	tb.Helper()
	ctx := context.Background()
	before := e.store.InsertStats().Groups
	head := e.createAsync(ctx, boardID, first)
	e.waitStats(tb, "the first row in flight", func(s storage.InsertStats) bool { return s.Groups == before+1 && s.Queued == 0 })
	var rest []<-chan result
	for i, l := range others {
		rest = append(rest, e.createAsync(ctx, othersBoard, l))
		e.waitStats(tb, "rows queued", func(s storage.InsertStats) bool { return s.Queued == i+1 })
	}
	return head, rest
}

func TestRowsQueuedDuringAnInsertShareTheNextStatement(t *testing.T) {
	t.Parallel()
	eachInsertPath(t, storage.TicketStoreOptions{}, func(t *testing.T, e *ticketEnv) {
		board := e.board(t, 1, "NINJA")
		release := e.holdBoard(t, board)
		head, rest := e.queueBehindOne(t, board, 1, []int64{2, 3, 4, 5, 6, 7, 8, 9, 10, 11})
		release()

		for _, ch := range append([]<-chan result{head}, rest...) {
			r := <-ch
			if r.err != nil {
				t.Fatalf("ticket %d: %v", r.t.LocalID, r.err)
			}
			if got, want := r.t.ID, e.storedID(t, board, r.t.LocalID); got != want || got == 0 {
				t.Errorf("ticket %d: id %d, stored as %d", r.t.LocalID, got, want)
			}
		}
		if s := e.store.InsertStats(); s.Groups != 2 || s.Rows != 11 {
			t.Fatalf("stats %+v, want 11 rows in 2 statements", s)
		}
	})
}

func TestGroupsAreBoundedByMaxGroupRows(t *testing.T) {
	t.Parallel()
	eachInsertPath(t, storage.TicketStoreOptions{MaxGroupRows: 3}, func(t *testing.T, e *ticketEnv) {
		board := e.board(t, 1, "NINJA")
		release := e.holdBoard(t, board)
		head, rest := e.queueBehindOne(t, board, 1, []int64{2, 3, 4, 5, 6, 7, 8})
		release()
		for _, ch := range append([]<-chan result{head}, rest...) {
			if r := <-ch; r.err != nil {
				t.Fatalf("ticket %d: %v", r.t.LocalID, r.err)
			}
		}
		// 1 in flight, then 7 queued rows in statements of 3, 3 and 1.
		if s := e.store.InsertStats(); s.Groups != 4 || s.Rows != 8 {
			t.Fatalf("stats %+v, want 8 rows in 4 statements", s)
		}
	})
}

// One bad row makes MySQL refuse the whole multi-row statement; its
// neighbours must still be written and only its own caller gets the error.
func TestABadRowInAGroupFailsOnlyItsOwnCaller(t *testing.T) {
	t.Parallel()
	eachInsertPath(t, storage.TicketStoreOptions{}, func(t *testing.T, e *ticketEnv) {
		ctx := context.Background()
		board := e.board(t, 1, "NINJA")
		taken := &tickets.Ticket{BoardID: board, LocalID: 5, Title: "already there"}
		if err := e.store.CreateTicket(ctx, taken); err != nil {
			t.Fatal(err)
		}
		release := e.holdBoard(t, board)
		head, rest := e.queueBehindOne(t, board, 1, []int64{2, 5, 3})
		missing := e.createAsync(ctx, 999, 1) // no such board
		e.waitStats(t, "the row of a missing board queued", func(s storage.InsertStats) bool { return s.Queued == 4 })
		release()

		want := map[int64]string{1: "", 2: "", 5: counters.ECONFLICT, 3: ""}
		for _, ch := range append([]<-chan result{head}, rest...) {
			r := <-ch
			if got := counters.ErrorCode(r.err); got != want[r.t.LocalID] {
				t.Errorf("ticket %d: %v, want code %q", r.t.LocalID, r.err, want[r.t.LocalID])
			}
			if r.err == nil && r.t.ID != e.storedID(t, board, r.t.LocalID) {
				t.Errorf("ticket %d: id %d, stored as %d", r.t.LocalID, r.t.ID, e.storedID(t, board, r.t.LocalID))
			}
		}
		if r := <-missing; counters.ErrorCode(r.err) != counters.ENOTFOUND {
			t.Errorf("ticket of a missing board: %v, want not_found", r.err)
		}
		if got := e.storedID(t, board, 5); got != taken.ID {
			t.Errorf("ticket 5 is now row %d, want the first one, %d", got, taken.ID)
		}
	})
}

func TestARowWhoseCallerGaveUpWhileQueuedIsNotWritten(t *testing.T) {
	t.Parallel()
	e := newTicketEnv(t, storage.TicketStoreOptions{})
	board := e.board(t, 1, "NINJA")
	release := e.holdBoard(t, board)
	head, _ := e.queueBehindOne(t, board, 1, nil)
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := e.createAsync(ctx, board, 2)
	e.waitStats(t, "the second row queued", func(s storage.InsertStats) bool { return s.Queued == 1 })
	cancel()
	r := <-gaveUp
	release()

	if counters.ErrorCode(r.err) != counters.EUNAVAILABLE {
		t.Fatalf("abandoned ticket: %v, want unavailable", r.err)
	}
	if msg := counters.ErrorMessage(r.err); msg != "The database cannot be reached; nothing was changed." {
		t.Fatalf("abandoned ticket's message %q does not say that nothing changed", msg)
	}
	if r := <-head; r.err != nil {
		t.Fatal(r.err)
	}
	// A later insert proves the abandoned row was skipped, not delayed.
	if r := <-e.createAsync(context.Background(), board, 3); r.err != nil {
		t.Fatal(r.err)
	}
	if id := e.storedID(t, board, 2); id != 0 {
		t.Fatalf("abandoned ticket was written as row %d", id)
	}
}
