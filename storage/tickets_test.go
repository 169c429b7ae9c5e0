package storage_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/tickets"
)

func TestBoardSlugIsUniqueWithinACompanyOnly(t *testing.T) {
	t.Parallel()
	e := newTicketEnv(t, storage.TicketStoreOptions{})
	ctx := context.Background()
	tests := []struct {
		company int64
		slug    string
		code    string
	}{
		{1, "NINJA", ""},
		{1, "NINJA", counters.ECONFLICT},
		{2, "NINJA", ""},
		{1, "ROCK", ""},
	}
	for _, tt := range tests {
		err := e.store.CreateBoard(ctx, &tickets.Board{CompanyID: tt.company, Slug: tt.slug, Title: "t"})
		if got := counters.ErrorCode(err); got != tt.code {
			t.Errorf("board %s of company %d: %v, want code %q", tt.slug, tt.company, err, tt.code)
		}
	}
}

func TestTicketTextRoundTripsAtItsLimits(t *testing.T) {
	t.Parallel()
	e := newTicketEnv(t, storage.TicketStoreOptions{})
	ctx := context.Background()
	board := e.board(t, 1, "NINJA")
	e.store.Now = func() time.Time { return time.Date(2025, 3, 14, 16, 5, 0, 123456789, time.FixedZone("CET", 3600)) }
	in := &tickets.Ticket{BoardID: board, LocalID: 7,
		Title: strings.Repeat("🥷", tickets.MaxTitleLen), Description: strings.Repeat("ß", tickets.MaxDescriptionLen)}
	if err := e.store.CreateTicket(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.Ticket(ctx, board, 7)
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2025, 3, 14, 15, 5, 0, 123456000, time.UTC)
	if got.ID != in.ID || got.Title != in.Title || got.Description != in.Description || !got.CreatedAt.Equal(want) {
		t.Fatalf("read back %d %q.. created %v, want %d created %v", got.ID, got.Title[:8], got.CreatedAt, in.ID, want)
	}
}

func TestTicketsAreFoundByBoardAndNumberOrByCompanyAndSlug(t *testing.T) {
	t.Parallel()
	e := newTicketEnv(t, storage.TicketStoreOptions{})
	ctx := context.Background()
	ninja, other := e.board(t, 1, "NINJA"), e.board(t, 2, "NINJA")
	for _, tk := range []*tickets.Ticket{{BoardID: ninja, LocalID: 1, Title: "a"}, {BoardID: other, LocalID: 1, Title: "b"}} {
		if err := e.store.CreateTicket(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	if tk, err := e.store.TicketBySlug(ctx, 2, "NINJA", 1); err != nil || tk.Title != "b" || tk.BoardID != other {
		t.Fatalf("TicketBySlug(2, NINJA, 1) = %+v, %v", tk, err)
	}
	notFound := []func() error{
		func() error { _, err := e.store.Ticket(ctx, ninja, 2); return err },
		func() error { _, err := e.store.TicketBySlug(ctx, 3, "NINJA", 1); return err },
		func() error { _, err := e.store.TicketBySlug(ctx, 1, "ROCK", 1); return err },
		func() error { _, err := e.store.Board(ctx, 99); return err },
		func() error { return e.store.DeleteTicket(ctx, ninja, 2) },
	}
	for i, f := range notFound {
		if err := f(); counters.ErrorCode(err) != counters.ENOTFOUND {
			t.Errorf("lookup %d = %v, want not_found", i, err)
		}
	}
}

func TestListTicketsPagesInNumberOrderAndMaxLocalIDSeesGaps(t *testing.T) {
	t.Parallel()
	e := newTicketEnv(t, storage.TicketStoreOptions{})
	ctx := context.Background()
	board, other := e.board(t, 1, "NINJA"), e.board(t, 1, "ROCK")
	if n, err := e.store.MaxLocalID(ctx, board); err != nil || n != 0 {
		t.Fatalf("MaxLocalID of an empty board = %d, %v", n, err)
	}
	for _, l := range []int64{9, 2, 5, 1, 7} {
		if err := e.store.CreateTicket(ctx, &tickets.Ticket{BoardID: board, LocalID: l, Title: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.store.CreateTicket(ctx, &tickets.Ticket{BoardID: other, LocalID: 3, Title: "t"}); err != nil {
		t.Fatal(err)
	}
	var got []int64
	after := int64(0)
	for pages := 0; ; pages++ {
		page, err := e.store.ListTickets(ctx, board, tickets.ListFilter{After: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range page.Tickets {
			got = append(got, tk.LocalID)
		}
		if page.NextAfter == nil {
			break
		}
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		after = *page.NextAfter
	}
	if want := []int64{1, 2, 5, 7, 9}; !slices.Equal(got, want) {
		t.Fatalf("listed %v, want %v", got, want)
	}
	if n, err := e.store.MaxLocalID(ctx, board); err != nil || n != 9 {
		t.Fatalf("MaxLocalID = %d, %v; want 9", n, err)
	}
}
