package storage_test

import (
	"context"
	"testing"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
)

const (
	nothingChanged = "The database cannot be reached; nothing was changed."
	mayHaveChanged = "The database cannot be reached; the change may or may not have been applied."
)

// When MySQL dies under a multi-row INSERT in flight, with more rows queued
// behind it, every caller must get 503, none a 500 and none a hang. Callers
// whose row was in flight may be told that nothing changed only where that
// is certain: an uncommitted transaction dies with its connection, an
// autocommit INSERT ... RETURNING may have committed just before the crash.
func TestTicketCallersGet503WhenMySQLDiesUnderAGroup(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		without     bool
		inFlightMsg string
	}{
		{"returning", false, mayHaveChanged},
		{"insert then read", true, nothingChanged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := testenv.StartMariaDB(t)
			ctx := context.Background()
			db, err := storage.Open(ctx, m.DSN("tickets"), storage.Options{MaxOpenConns: 8})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			store := storage.NewTicketStore(db, storage.TicketStoreOptions{WithoutReturning: tt.without})
			e := &ticketEnv{db: db, store: store}
			a, b := e.board(t, 1, "A"), e.board(t, 1, "B")
			releaseA := e.holdBoard(t, a)
			e.holdBoard(t, b)

			// A's row goes first and alone; B's three rows queue behind it
			// and, once A is released, are in flight together, held by B.
			head, inFlight := e.queueBehindOneOn(t, a, 1, b, []int64{1, 2, 3})
			releaseA()
			if r := <-head; r.err != nil {
				t.Fatal(r.err)
			}
			e.waitStats(t, "B's group in flight", func(s storage.InsertStats) bool { return s.Groups == 2 && s.Queued == 0 })
			queued := e.createAsync(ctx, b, 4)
			e.waitStats(t, "a row queued behind B's group", func(s storage.InsertStats) bool { return s.Queued == 1 })
			m.Kill()

			for _, ch := range inFlight {
				r := <-ch
				if code, msg := counters.ErrorCode(r.err), counters.ErrorMessage(r.err); code != counters.EUNAVAILABLE || msg != tt.inFlightMsg {
					t.Errorf("row %d in flight: %v, want unavailable with %q", r.t.LocalID, r.err, tt.inFlightMsg)
				}
			}
			// The queued row is written alone; whether the driver notices the
			// dead connection before or after sending it decides the message.
			if r := <-queued; counters.ErrorCode(r.err) != counters.EUNAVAILABLE {
				t.Errorf("queued row: %v, want unavailable", r.err)
			}
		})
	}
}
