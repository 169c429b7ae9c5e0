package tickets_test

// The service's own rules, without a database: a fake of the Store and of
// the one counters method the service uses. service_test.go runs the same
// service on the real stores.

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/tickets"
)

// memStore is an in-memory tickets.Store that records its calls. fail,
// when set, answers a call in place of the store.
type memStore struct {
	boards  map[int64]tickets.Board
	tickets map[[2]int64]tickets.Ticket // board, number
	calls   []string
	fail    func(call string) error
}

func newMemStore() *memStore {
	return &memStore{boards: map[int64]tickets.Board{}, tickets: map[[2]int64]tickets.Ticket{}}
}

func (m *memStore) call(what string) error {
	m.calls = append(m.calls, what)
	if m.fail != nil {
		return m.fail(what)
	}
	return nil
}

func (m *memStore) CreateBoard(_ context.Context, b *tickets.Board) error {
	if err := m.call("CreateBoard"); err != nil {
		return err
	}
	for _, o := range m.boards {
		if o.CompanyID == b.CompanyID && o.Slug == b.Slug {
			return counters.Errorf(counters.ECONFLICT, "taken")
		}
	}
	b.ID = int64(len(m.boards) + 1)
	m.boards[b.ID] = *b
	return nil
}

func (m *memStore) Board(_ context.Context, id int64) (*tickets.Board, error) {
	if err := m.call("Board"); err != nil {
		return nil, err
	}
	b, ok := m.boards[id]
	if !ok {
		return nil, counters.Errorf(counters.ENOTFOUND, "no board")
	}
	return &b, nil
}

func (m *memStore) CreateTicket(_ context.Context, t *tickets.Ticket) error {
	if err := m.call(fmt.Sprintf("CreateTicket %d", t.LocalID)); err != nil {
		return err
	}
	if _, ok := m.boards[t.BoardID]; !ok {
		return counters.Errorf(counters.ENOTFOUND, "no board")
	}
	k := [2]int64{t.BoardID, t.LocalID}
	if _, ok := m.tickets[k]; ok {
		return counters.Errorf(counters.ECONFLICT, "number in use")
	}
	t.ID = int64(len(m.tickets) + 1)
	m.tickets[k] = *t
	return nil
}

func (m *memStore) Ticket(_ context.Context, boardID, localID int64) (*tickets.Ticket, error) {
	if err := m.call("Ticket"); err != nil {
		return nil, err
	}
	t, ok := m.tickets[[2]int64{boardID, localID}]
	if !ok {
		return nil, counters.Errorf(counters.ENOTFOUND, "no ticket")
	}
	return &t, nil
}

func (m *memStore) TicketBySlug(_ context.Context, company int64, slug string, localID int64) (*tickets.Ticket, error) {
	if err := m.call("TicketBySlug"); err != nil {
		return nil, err
	}
	for _, b := range m.boards {
		if b.CompanyID == company && b.Slug == slug {
			return m.Ticket(context.Background(), b.ID, localID)
		}
	}
	return nil, counters.Errorf(counters.ENOTFOUND, "no ticket")
}

func (m *memStore) DeleteTicket(_ context.Context, boardID, localID int64) error {
	if err := m.call("DeleteTicket"); err != nil {
		return err
	}
	k := [2]int64{boardID, localID}
	if _, ok := m.tickets[k]; !ok {
		return counters.Errorf(counters.ENOTFOUND, "no ticket")
	}
	delete(m.tickets, k)
	return nil
}

func (m *memStore) ListTickets(_ context.Context, boardID int64, f tickets.ListFilter) (*tickets.Page, error) {
	if err := m.call("ListTickets"); err != nil {
		return nil, err
	}
	p := &tickets.Page{}
	for k, t := range m.tickets {
		if k[0] == boardID && t.LocalID > f.After {
			p.Tickets = append(p.Tickets, t)
		}
	}
	slices.SortFunc(p.Tickets, func(a, b tickets.Ticket) int { return int(a.LocalID - b.LocalID) })
	if len(p.Tickets) > f.Limit {
		p.Tickets = p.Tickets[:f.Limit]
		p.NextAfter = &p.Tickets[f.Limit-1].LocalID
	}
	return p, nil
}

func (m *memStore) MaxLocalID(_ context.Context, boardID int64) (int64, error) {
	if err := m.call("MaxLocalID"); err != nil {
		return 0, err
	}
	var high int64
	for k := range m.tickets {
		if k[0] == boardID {
			high = max(high, k[1])
		}
	}
	return high, nil
}

// memCounters is the counters.Service the tickets service uses: Increment
// only (the embedded nil interface panics on any other call).
type memCounters struct {
	counters.Service
	values map[string]int64
	err    error
}

func (c *memCounters) Increment(_ context.Context, name string, by int64) (int64, error) {
	if c.err != nil {
		return 0, c.err
	}
	c.values[name] += by
	return c.values[name], nil
}

type rig struct {
	svc   tickets.Service
	store *memStore
	ctrs  *memCounters
}

func newRig() *rig {
	st, c := newMemStore(), &memCounters{values: map[string]int64{}}
	return &rig{svc: tickets.NewService(st, c), store: st, ctrs: c}
}

func (r *rig) board(t *testing.T, company int64, slug string) *tickets.Board {
	t.Helper()
	b, err := r.svc.CreateBoard(context.Background(), tickets.BoardCreate{CompanyID: company, Slug: slug, Title: slug})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (r *rig) ticket(t *testing.T, boardID int64) *tickets.Ticket {
	t.Helper()
	tk, err := r.svc.CreateTicket(context.Background(), boardID, tickets.TicketCreate{Title: "a ticket"})
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func TestTicketsAreNumberedByTheBoardsCounterAndKeyedByItsSlug(t *testing.T) {
	r := newRig()
	ninja, rock := r.board(t, 1, "ninja"), r.board(t, 1, "Rock")
	var keys []string
	for _, b := range []*tickets.Board{ninja, rock, ninja, ninja, rock} {
		keys = append(keys, r.ticket(t, b.ID).Key)
	}
	if want := []string{"NINJA-1", "ROCK-1", "NINJA-2", "NINJA-3", "ROCK-2"}; !slices.Equal(keys, want) {
		t.Fatalf("keys = %v, want %v", keys, want)
	}
	if got := r.ctrs.values[tickets.SequenceName(ninja.ID)]; got != 3 {
		t.Fatalf("NINJA's counter = %d, want 3", got)
	}
	if _, err := r.svc.CreateBoard(context.Background(), tickets.BoardCreate{CompanyID: 1, Slug: "NINJA", Title: "again"}); counters.ErrorCode(err) != counters.ECONFLICT {
		t.Fatalf("a second NINJA board of company 1: %v, want conflict", err)
	}
}

// A counter behind its tickets (restored from an older backup, or set
// outside the HTTP API) makes creation skip the numbers in use; a number
// that stays taken fails after a bounded number of tries, never loops.
func TestCreateTicketSkipsNumbersInUseAndGivesUpAfterThreeTries(t *testing.T) {
	tests := []struct {
		name      string
		counter   int64 // the counter's value after 4 tickets
		conflicts int   // numbers the store refuses as in use, whatever they are
		want      int64 // the number given, 0 when creation fails
		code      string
		inserts   int // numbers the creation tried to insert
	}{
		{"counter in step", 4, 0, 5, "", 1},
		{"counter rewound to 1", 1, 0, 5, "", 2},
		{"counter rewound to 0", 0, 0, 5, "", 2},
		{"counter below 0: no insert of a number below 1", -5, 0, 5, "", 1},
		{"a number raced away once", 4, 1, 6, "", 2},
		{"a number always in use", 4, 3, 0, counters.EINTERNAL, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig()
			b := r.board(t, 1, "NINJA")
			for range 4 {
				r.ticket(t, b.ID)
			}
			seq := tickets.SequenceName(b.ID)
			r.ctrs.values[seq] = tt.counter
			conflicts := tt.conflicts
			r.store.fail = func(call string) error {
				if conflicts > 0 && call != "MaxLocalID" && call != "Board" {
					conflicts--
					return counters.Errorf(counters.ECONFLICT, "raced")
				}
				return nil
			}
			before := len(r.store.calls)
			got, err := r.svc.CreateTicket(context.Background(), b.ID, tickets.TicketCreate{Title: "next"})
			if code := counters.ErrorCode(err); code != tt.code {
				t.Fatalf("CreateTicket = %v, want code %q", err, tt.code)
			}
			if tt.code == "" && (got.LocalID != tt.want || got.Key != fmt.Sprintf("NINJA-%d", tt.want)) {
				t.Fatalf("ticket %d %s, want number %d", got.LocalID, got.Key, tt.want)
			}
			var creates int
			for _, c := range r.store.calls[before:] {
				if len(c) > 12 && c[:12] == "CreateTicket" {
					creates++
				}
			}
			if creates != tt.inserts {
				t.Fatalf("store calls %v: %d inserts, want %d", r.store.calls[before:], creates, tt.inserts)
			}
		})
	}
}

// What the service refuses it refuses before it takes a number or asks the
// store anything but the board; a store's or the counters' failure is
// passed on as it came.
func TestCreateTicketRefusalsTakeNoNumber(t *testing.T) {
	unavailable := counters.Errorf(counters.EUNAVAILABLE, "MySQL is away.")
	tests := []struct {
		name     string
		board    int64
		title    string
		storeErr error
		ctrErr   error
		code     string
		number   bool // whether the board's counter moved
	}{
		{"blank title", 1, "  ", nil, nil, counters.EINVALID, false},
		{"unknown board", 42, "t", nil, nil, counters.ENOTFOUND, false},
		{"board id 0", 0, "t", nil, nil, counters.EINVALID, false},
		{"the counters unavailable", 1, "t", nil, unavailable, counters.EUNAVAILABLE, false},
		{"the insert unavailable", 1, "t", unavailable, nil, counters.EUNAVAILABLE, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, c := newMemStore(), &memCounters{values: map[string]int64{}, err: tt.ctrErr}
			st.boards[1] = tickets.Board{ID: 1, CompanyID: 1, Slug: "NINJA"}
			svc := tickets.NewService(st, c)
			st.fail = func(call string) error {
				if call != "Board" {
					return tt.storeErr
				}
				return nil
			}
			_, err := svc.CreateTicket(context.Background(), tt.board, tickets.TicketCreate{Title: tt.title})
			if code := counters.ErrorCode(err); code != tt.code {
				t.Fatalf("CreateTicket = %v, want code %q", err, tt.code)
			}
			if moved := c.values[tickets.SequenceName(tt.board)] != 0; moved != tt.number {
				t.Fatalf("counter moved: %v, want %v (%v)", moved, tt.number, c.values)
			}
		})
	}
}

// Boards never change, so the service reads each from the store once; what
// a caller does to the board it got changes nothing the service keeps.
func TestABoardIsReadFromTheStoreOnceAndHandedOutAsACopy(t *testing.T) {
	r := newRig()
	ctx := context.Background()
	made := r.board(t, 1, "NINJA")
	r.store.boards[2] = tickets.Board{ID: 2, CompanyID: 1, Slug: "ROCK"} // made by another process
	for range 3 {
		for _, id := range []int64{made.ID, 2} {
			b, err := r.svc.Board(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			b.Slug = "CHANGED"
		}
	}
	var reads int
	for _, c := range r.store.calls {
		if c == "Board" {
			reads++
		}
	}
	if reads != 1 {
		t.Fatalf("store calls %v: %d board reads, want 1 (the board another process made)", r.store.calls, reads)
	}
	if b, _ := r.svc.Board(ctx, made.ID); b.Slug != "NINJA" {
		t.Fatalf("slug %q after a caller changed its copy, want NINJA", b.Slug)
	}
}

// Every way of reading a ticket fills in its key from the board's slug,
// and bad numbers, keys and filters are refused before the store.
func TestReadsFillInTheKeyAndRefuseBadArguments(t *testing.T) {
	r := newRig()
	ctx := context.Background()
	b := r.board(t, 7, "NINJA")
	for range 3 {
		r.ticket(t, b.ID)
	}
	key := func(tk *tickets.Ticket, err error) (string, string) {
		if err != nil {
			return "", counters.ErrorCode(err)
		}
		return tk.Key, ""
	}
	list := func(f tickets.ListFilter) func() (string, string) {
		return func() (string, string) {
			p, err := r.svc.ListTickets(ctx, b.ID, f)
			if err != nil {
				return "", counters.ErrorCode(err)
			}
			var ks []string
			for _, tk := range p.Tickets {
				ks = append(ks, tk.Key)
			}
			next := "end"
			if p.NextAfter != nil {
				next = fmt.Sprint(*p.NextAfter)
			}
			return fmt.Sprint(ks, " next ", next), ""
		}
	}
	tests := []struct {
		name     string
		read     func() (string, string)
		want     string
		code     string
		storeHit bool
	}{
		{"by number", func() (string, string) { return key(r.svc.Ticket(ctx, b.ID, 2)) }, "NINJA-2", "", true},
		{"by number 0", func() (string, string) { return key(r.svc.Ticket(ctx, b.ID, 0)) }, "", counters.EINVALID, false},
		{"by number on an unknown board", func() (string, string) { return key(r.svc.Ticket(ctx, 99, 1)) }, "", counters.ENOTFOUND, true},
		{"by a lower-case key", func() (string, string) { return key(r.svc.TicketByKey(ctx, 7, "ninja-3")) }, "NINJA-3", "", true},
		{"by key in another company", func() (string, string) { return key(r.svc.TicketByKey(ctx, 8, "NINJA-3")) }, "", counters.ENOTFOUND, true},
		{"by key of company 0", func() (string, string) { return key(r.svc.TicketByKey(ctx, 0, "NINJA-3")) }, "", counters.EINVALID, false},
		{"by a key without a number", func() (string, string) { return key(r.svc.TicketByKey(ctx, 7, "NINJA")) }, "", counters.EINVALID, false},
		{"a page", list(tickets.ListFilter{Limit: 2}), "[NINJA-1 NINJA-2] next 2", "", true},
		{"the last page", list(tickets.ListFilter{After: 2}), "[NINJA-3] next end", "", true},
		{"a negative after", list(tickets.ListFilter{After: -1}), "", counters.EINVALID, false},
		{"a limit too large", list(tickets.ListFilter{Limit: 1 << 20}), "", counters.EINVALID, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(r.store.calls)
			got, code := tt.read()
			if got != tt.want || code != tt.code {
				t.Fatalf("got %q, code %q; want %q, code %q", got, code, tt.want, tt.code)
			}
			if hit := len(r.store.calls) > before; hit != tt.storeHit {
				t.Fatalf("store calls %v, want any: %v", r.store.calls[before:], tt.storeHit)
			}
		})
	}
}

// A deleted ticket's number is never handed out again: the counter keeps
// the high-water mark, whatever the store holds.
func TestDeletedTicketsNumberIsNotHandedOutAgainWithoutADatabase(t *testing.T) {
	r := newRig()
	ctx := context.Background()
	b := r.board(t, 1, "NINJA")
	r.ticket(t, b.ID)
	last := r.ticket(t, b.ID)
	tests := []struct {
		name   string
		delete func() error
		code   string
	}{
		{"the highest", func() error { return r.svc.DeleteTicket(ctx, b.ID, last.LocalID) }, ""},
		{"the same again", func() error { return r.svc.DeleteTicket(ctx, b.ID, last.LocalID) }, counters.ENOTFOUND},
		{"number 0", func() error { return r.svc.DeleteTicket(ctx, b.ID, 0) }, counters.EINVALID},
		{"on an unknown board", func() error { return r.svc.DeleteTicket(ctx, 99, 1) }, counters.ENOTFOUND},
	}
	for _, tt := range tests {
		if code := counters.ErrorCode(tt.delete()); code != tt.code {
			t.Fatalf("%s: code %q, want %q", tt.name, code, tt.code)
		}
	}
	if got := r.ticket(t, b.ID).LocalID; got != 3 {
		t.Fatalf("number after deleting the highest = %d, want 3", got)
	}
}
