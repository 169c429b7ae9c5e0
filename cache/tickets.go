package cache

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"countersvc/tickets"
)

// Tickets puts the cache in front of the ticket read views. A ticket never
// changes after it is created and its number is never reused, so an entry
// can only go wrong one way: a deleted ticket still served. Deletes
// therefore invalidate, and fills use the generation guard of the counter
// entries (same scripts, same keyspace, same distrust and repair). Tickets
// that are not found are not cached, so creating one needs no Redis call.
// Pages of a board's tickets lag by at most ListTTL, like counter lists.
type Tickets struct {
	tickets.Store // creation, boards and anything not cached go straight through
	c             *Store

	// Boards never change and are never deleted: the board of a company's
	// slug, once seen, is known for good.
	boards      sync.Map // "company/slug" -> board id
	boardsCount atomic.Int64
}

// maxKnownBoards bounds the slug-to-board map.
const maxKnownBoards = 100_000

// NewTickets returns next with its read views served through the cache c.
func NewTickets(next tickets.Store, c *Store) *Tickets {
	return &Tickets{Store: next, c: c}
}

// ticketName is the entry name of a ticket. It starts with a control
// character, which no counter name may contain, so it never meets one.
func ticketName(boardID, localID int64) string {
	return "\x01ticket/" + strconv.FormatInt(boardID, 10) + "/" + strconv.FormatInt(localID, 10)
}

// Ticket implements tickets.Store.
func (t *Tickets) Ticket(ctx context.Context, boardID, localID int64) (*tickets.Ticket, error) {
	name := ticketName(boardID, localID)
	load := func(ctx context.Context) (*tickets.Ticket, error) { return t.Store.Ticket(ctx, boardID, localID) }
	if t.c.distrust.covers(name) {
		return load(ctx)
	}
	key := t.c.keys.counter(name)
	v, gen, err := t.c.lookupRaw(ctx, key)
	if err != nil {
		return load(ctx)
	}
	if v != nil {
		var tk tickets.Ticket
		if json.Unmarshal(v, &tk) == nil {
			return &tk, nil
		}
	}
	tk, err := load(ctx)
	if err == nil {
		if b, err := json.Marshal(tk); err == nil {
			t.c.fillRaw(ctx, key, gen, b)
		}
	}
	return tk, err
}

// TicketBySlug implements tickets.Store: once the board of the slug is
// known, the ticket is read through Ticket and its cache.
func (t *Tickets) TicketBySlug(ctx context.Context, companyID int64, slug string, localID int64) (*tickets.Ticket, error) {
	k := strconv.FormatInt(companyID, 10) + "/" + slug
	if id, ok := t.boards.Load(k); ok {
		return t.Ticket(ctx, id.(int64), localID)
	}
	tk, err := t.Store.TicketBySlug(ctx, companyID, slug, localID)
	if err == nil && t.boardsCount.Load() < maxKnownBoards {
		if _, loaded := t.boards.LoadOrStore(k, tk.BoardID); !loaded {
			t.boardsCount.Add(1)
		}
	}
	return tk, err
}

// DeleteTicket implements tickets.Store and invalidates the ticket's entry
// once MySQL has answered, success or not (a failure may have committed).
func (t *Tickets) DeleteTicket(ctx context.Context, boardID, localID int64) error {
	err := t.Store.DeleteTicket(ctx, boardID, localID)
	t.c.invalidate(ctx, ticketName(boardID, localID))
	return err
}

// storedPage is a cached page of tickets with the time its MySQL read began.
type storedPage struct {
	At   time.Time     `json:"at"`
	Page *tickets.Page `json:"page"`
}

// ListTickets implements tickets.Store. Pages are never invalidated: each is
// served only while younger than ListTTL, counted from when its MySQL read
// began, and Redis drops it at that absolute time even if it stored it late.
func (t *Tickets) ListTickets(ctx context.Context, boardID int64, f tickets.ListFilter) (*tickets.Page, error) {
	key := t.c.keys.prefix + "tl:" + strconv.FormatInt(boardID, 10) + ":" +
		strconv.FormatInt(f.After, 10) + ":" + strconv.Itoa(f.Limit)
	var b []byte
	err := t.c.do(ctx, "ticket_list_read", func(ctx context.Context) error {
		var err error
		b, err = t.c.rdb.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			b, err = nil, nil
		}
		return err
	})
	if err == nil && b != nil {
		var sp storedPage
		if json.Unmarshal(b, &sp) == nil && sp.Page != nil && time.Since(sp.At) <= t.c.o.ListTTL {
			return sp.Page, nil
		}
	}
	at := time.Now()
	p, lerr := t.Store.ListTickets(ctx, boardID, f)
	exp := at.Add(t.c.o.ListTTL)
	if lerr == nil && err == nil && time.Now().Before(exp) {
		if enc, err := json.Marshal(storedPage{At: at, Page: p}); err == nil {
			t.c.do(ctx, "ticket_list_fill", func(ctx context.Context) error {
				return t.c.rdb.SetArgs(ctx, key, enc, redis.SetArgs{ExpireAt: exp}).Err()
			})
		}
	}
	return p, lerr
}
