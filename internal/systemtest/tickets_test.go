package systemtest_test

import (
	"context"
	"testing"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/tickets"
)

type fixture struct {
	svc      tickets.Service
	counters counters.Service
}

// newFixture runs the tickets service on the real stores of a fresh
// database: the tests that use it share nothing, and run in parallel
// (beside this package's other parallel tests, not before them).
func newFixture(tb testing.TB) *fixture {
	tb.Helper()
	cs, db := storetest.OpenStore(tb, storetest.MigratedDSN(tb))
	ts := storage.NewTicketStore(db, storage.TicketStoreOptions{})
	ctrs := counters.NewService(counters.BackendOf(cs))
	return &fixture{svc: tickets.NewService(ts, ctrs), counters: ctrs}
}

func (f *fixture) board(tb testing.TB, company int64, slug string) *tickets.Board {
	tb.Helper()
	b, err := f.svc.CreateBoard(context.Background(), tickets.BoardCreate{CompanyID: company, Slug: slug, Title: slug + " board"})
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func (f *fixture) ticket(tb testing.TB, boardID int64) *tickets.Ticket {
	tb.Helper()
	tk, err := f.svc.CreateTicket(context.Background(), boardID, tickets.TicketCreate{Title: "a ticket"})
	if err != nil {
		tb.Fatal(err)
	}
	return tk
}

func TestEachBoardNumbersItsTicketsFromOne(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ninja, rock := f.board(t, 1, "ninja"), f.board(t, 1, "ROCK")
	var keys []string
	for _, b := range []*tickets.Board{ninja, rock, ninja, ninja, rock} {
		keys = append(keys, f.ticket(t, b.ID).Key)
	}
	want := []string{"NINJA-1", "ROCK-1", "NINJA-2", "NINJA-3", "ROCK-2"}
	for i := range want {
		if keys[i] != want[i] {
			t.Fatalf("keys = %v, want %v", keys, want)
		}
	}
	c, err := f.counters.Get(context.Background(), tickets.SequenceName(ninja.ID))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Value, int64(3); got != want {
		t.Fatalf("sequence of NINJA = %d, want %d", got, want)
	}
}

func TestDeletedTicketsNumberIsNeverHandedOutAgain(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	b := f.board(t, 1, "NINJA")
	f.ticket(t, b.ID)
	last := f.ticket(t, b.ID)
	if err := f.svc.DeleteTicket(ctx, b.ID, last.LocalID); err != nil {
		t.Fatal(err)
	}
	if got, want := f.ticket(t, b.ID).LocalID, int64(3); got != want {
		t.Fatalf("number after deleting the highest = %d, want %d", got, want)
	}
	if err := f.svc.DeleteTicket(ctx, b.ID, last.LocalID); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("second delete = %v, want not_found", err)
	}
}

// The counter can fall behind its tickets only from outside the HTTP API
// (an older backup of the counter table, a Go consumer's Set): creation
// must then skip the numbers in use, never fail or duplicate.
func TestCreateTicketSkipsNumbersInUseWhenTheSequenceIsBehind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value int64
	}{
		{"rewound to 1", 1},
		{"rewound to 0", 0},
		{"rewound below 0", -5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			ctx := context.Background()
			b := f.board(t, 1, "NINJA")
			for range 4 {
				f.ticket(t, b.ID)
			}
			if _, _, err := f.counters.Set(ctx, counters.SetRequest{Name: tickets.SequenceName(b.ID), Value: tt.value,
				Min: counters.Bound{Keep: true}, Max: counters.Bound{Keep: true}}); err != nil {
				t.Fatal(err)
			}
			if got, want := f.ticket(t, b.ID).LocalID, int64(5); got != want {
				t.Fatalf("number = %d, want %d", got, want)
			}
		})
	}
}

func TestCreateTicketOnAnUnknownBoardTakesNoNumber(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.svc.CreateTicket(ctx, 42, tickets.TicketCreate{Title: "lost"})
	if counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("CreateTicket = %v, want not_found", err)
	}
	if _, err := f.counters.Get(ctx, tickets.SequenceName(42)); counters.ErrorCode(err) != counters.ENOTFOUND {
		t.Fatalf("sequence of an unknown board: %v, want not_found", err)
	}
}

func TestTicketByKeyLooksWithinTheCompany(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	mine, theirs := f.board(t, 1, "NINJA"), f.board(t, 2, "NINJA")
	want := f.ticket(t, mine.ID)
	f.ticket(t, theirs.ID)
	tests := []struct {
		company int64
		key     string
		code    string
	}{
		{1, "NINJA-1", ""},
		{1, "ninja-1", ""},
		{1, "NINJA-2", counters.ENOTFOUND},
		{1, "ROCK-1", counters.ENOTFOUND},
		{3, "NINJA-1", counters.ENOTFOUND},
		{1, "NINJA", counters.EINVALID},
		{0, "NINJA-1", counters.EINVALID},
	}
	for _, tt := range tests {
		got, err := f.svc.TicketByKey(ctx, tt.company, tt.key)
		if code := counters.ErrorCode(err); code != tt.code {
			t.Errorf("TicketByKey(%d, %q) = %v, want code %q", tt.company, tt.key, err, tt.code)
			continue
		}
		if tt.code == "" && (got.ID != want.ID || got.Key != "NINJA-1") {
			t.Errorf("TicketByKey(%d, %q) = %+v, want %+v", tt.company, tt.key, got, want)
		}
	}
}
