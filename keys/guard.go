package keys

import (
	"context"
	"iter"
	"time"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
	"github.com/countersvc/countersvc/live"
	"github.com/countersvc/countersvc/tickets"
	"github.com/countersvc/countersvc/webhooks"
)

// Counters returns svc with every call checked against the principal in
// its context (see NewContext) before it runs: each counter name, batch
// item, list and reset prefix. A call without a principal is refused.
// Idempotency keys get the principal's key id as their owner here, so no
// handler can forget to namespace them. It is the view of the counters
// that the HTTP API gets; the service's own consumers (ticket numbers,
// page hits) use svc itself.
//
// A new method of counters.Service does not compile here until it says
// what it checks.
func (s *Service) Counters(svc counters.Service) counters.Service {
	return &guardedCounters{keys: s, svc: svc}
}

type guardedCounters struct {
	keys *Service
	svc  counters.Service
}

// name checks one counter name against the principal of ctx.
func (g *guardedCounters) name(ctx context.Context, name string, a Access) (*Principal, error) {
	p := FromContext(ctx)
	return p, g.keys.deny(p.Name(name, a))
}

func (g *guardedCounters) Increment(ctx context.Context, name string, by int64) (int64, error) {
	if _, err := g.name(ctx, name, Write); err != nil {
		return 0, err
	}
	return g.svc.Increment(ctx, name, by)
}

func (g *guardedCounters) Get(ctx context.Context, name string) (*counters.Counter, error) {
	if _, err := g.name(ctx, name, Read); err != nil {
		return nil, err
	}
	return g.svc.Get(ctx, name)
}

func (g *guardedCounters) Set(ctx context.Context, req counters.SetRequest) (*counters.Counter, bool, error) {
	if _, err := g.name(ctx, req.Name, Write); err != nil {
		return nil, false, err
	}
	return g.svc.Set(ctx, req)
}

func (g *guardedCounters) Delete(ctx context.Context, name string) error {
	if _, err := g.name(ctx, name, Write); err != nil {
		return err
	}
	return g.svc.Delete(ctx, name)
}

// List lists a key's own prefix when it names none and has one. A key
// that lists everything through the "" prefix never sees reserved names:
// they are left out of its page, whose cursor stays the store's.
func (g *guardedCounters) List(ctx context.Context, f counters.ListFilter) (*counters.Page, error) {
	p := FromContext(ctx)
	f.Prefix = p.listPrefix(f.Prefix)
	if err := g.keys.deny(p.Prefix(f.Prefix, Read)); err != nil {
		return nil, err
	}
	page, err := g.svc.List(ctx, f)
	if err != nil || p.IsAdmin() || f.Prefix != "" {
		return page, err
	}
	kept := make([]counters.Counter, 0, len(page.Counters)) // the page may be a cache's: never edit it
	for _, c := range page.Counters {
		if !counters.IsReserved(c.Name) {
			kept = append(kept, c)
		}
	}
	return &counters.Page{Counters: kept, NextAfter: page.NextAfter}, nil
}

// Reset of all counters is the admin's; a prefix must be the key's.
func (g *guardedCounters) Reset(ctx context.Context, req counters.ResetRequest) (int64, error) {
	p := FromContext(ctx)
	check := p.All()
	if !req.All {
		check = p.Prefix(req.Prefix, Write)
	}
	if err := g.keys.deny(check); err != nil {
		return 0, err
	}
	return g.svc.Reset(ctx, req)
}

// items checks every item of a batch; the error names the first refused.
func (g *guardedCounters) items(ctx context.Context, items []counters.Increment) (*Principal, error) {
	p := FromContext(ctx)
	for i, it := range items {
		if err := g.keys.deny(p.Name(it.Name, Write)); err != nil {
			return nil, counters.ItemError(i, it.Name, err)
		}
	}
	return p, nil
}

func (g *guardedCounters) Batch(ctx context.Context, items []counters.Increment) ([]int64, error) {
	if _, err := g.items(ctx, items); err != nil {
		return nil, err
	}
	return g.svc.Batch(ctx, items)
}

func (g *guardedCounters) IncrementOnce(ctx context.Context, key counters.Idempotency, name string, by int64) (int64, bool, error) {
	p, err := g.name(ctx, name, Write)
	if err != nil {
		return 0, false, err
	}
	key.Owner = p.KeyID()
	return g.svc.IncrementOnce(ctx, key, name, by)
}

func (g *guardedCounters) SetOnce(ctx context.Context, key counters.Idempotency, req counters.SetRequest) (*counters.Counter, bool, bool, error) {
	p, err := g.name(ctx, req.Name, Write)
	if err != nil {
		return nil, false, false, err
	}
	key.Owner = p.KeyID()
	return g.svc.SetOnce(ctx, key, req)
}

func (g *guardedCounters) BatchOnce(ctx context.Context, key counters.Idempotency, items []counters.Increment) ([]int64, bool, error) {
	p, err := g.items(ctx, items)
	if err != nil {
		return nil, false, err
	}
	key.Owner = p.KeyID()
	return g.svc.BatchOnce(ctx, key, items)
}

// Import needs the write scope to start; then each line's name is checked
// as it comes. A line outside the key's prefixes is refused
// (permission_denied) and the others applied; with atomic, that refusal
// makes the whole import 403, nothing applied, as for a batch.
func (g *guardedCounters) Import(ctx context.Context, opts counters.ImportOptions, lines iter.Seq[counters.ImportLine]) (*counters.ImportReport, error) {
	p := FromContext(ctx)
	if err := g.keys.deny(p.scope(Write)); err != nil {
		return counters.NewImportReport(opts), err
	}
	if opts.Key != nil {
		opts.Key.Owner = p.KeyID() // in place: the caller fills in its Fingerprint as the lines run
	}
	checked := func(yield func(counters.ImportLine) bool) {
		for l := range lines {
			// Bad and reserved names are the domain's to refuse, with their own reasons.
			if name := l.Counter.Name; l.Reason == "" && l.Err == nil && counters.ValidateName(name) == nil && !counters.IsReserved(name) {
				if err := p.Name(name, Write); err != nil {
					l = l.Refuse(counters.ReasonPermission, "%s", counters.ErrorMessage(err))
				}
			}
			if !yield(l) {
				return
			}
		}
	}
	return g.svc.Import(ctx, opts, checked)
}

// Tickets returns svc with every call checked against the principal in its
// context: the company of each board and ticket it touches. A board's
// company is looked up (through svc's board cache) only for a principal
// that may use some company.
func (s *Service) Tickets(svc tickets.Service) tickets.Service {
	return &guardedTickets{keys: s, svc: svc}
}

type guardedTickets struct {
	keys *Service
	svc  tickets.Service
}

// board checks that the principal of ctx may do a to the board's company.
func (g *guardedTickets) board(ctx context.Context, boardID int64, a Access) error {
	p := FromContext(ctx)
	if err := g.keys.deny(p.companies(a)); err != nil {
		return err
	}
	if p.IsAdmin() {
		return nil
	}
	b, err := g.svc.Board(ctx, boardID)
	if err != nil {
		return err
	}
	return g.keys.deny(p.Company(b.CompanyID, a))
}

func (g *guardedTickets) company(ctx context.Context, company int64, a Access) error {
	return g.keys.deny(FromContext(ctx).Company(company, a))
}

func (g *guardedTickets) CreateBoard(ctx context.Context, req tickets.BoardCreate) (*tickets.Board, error) {
	if err := g.company(ctx, req.CompanyID, Write); err != nil {
		return nil, err
	}
	return g.svc.CreateBoard(ctx, req)
}

func (g *guardedTickets) Board(ctx context.Context, id int64) (*tickets.Board, error) {
	if err := g.board(ctx, id, Read); err != nil {
		return nil, err
	}
	return g.svc.Board(ctx, id)
}

func (g *guardedTickets) CreateTicket(ctx context.Context, boardID int64, req tickets.TicketCreate) (*tickets.Ticket, error) {
	if err := g.board(ctx, boardID, Write); err != nil {
		return nil, err
	}
	return g.svc.CreateTicket(ctx, boardID, req)
}

func (g *guardedTickets) Ticket(ctx context.Context, boardID, localID int64) (*tickets.Ticket, error) {
	if err := g.board(ctx, boardID, Read); err != nil {
		return nil, err
	}
	return g.svc.Ticket(ctx, boardID, localID)
}

func (g *guardedTickets) TicketByKey(ctx context.Context, companyID int64, key string) (*tickets.Ticket, error) {
	if err := g.company(ctx, companyID, Read); err != nil {
		return nil, err
	}
	return g.svc.TicketByKey(ctx, companyID, key)
}

func (g *guardedTickets) DeleteTicket(ctx context.Context, boardID, localID int64) error {
	if err := g.board(ctx, boardID, Write); err != nil {
		return err
	}
	return g.svc.DeleteTicket(ctx, boardID, localID)
}

func (g *guardedTickets) ListTickets(ctx context.Context, boardID int64, f tickets.ListFilter) (*tickets.Page, error) {
	if err := g.board(ctx, boardID, Read); err != nil {
		return nil, err
	}
	return g.svc.ListTickets(ctx, boardID, f)
}

// HistoryReader is how the HTTP API reads history (history.Service).
type HistoryReader interface {
	Parse(r history.Request) (history.Query, error)
	Series(ctx context.Context, q history.Query) (*history.Series, error)
	Today(ctx context.Context, name string, zone *time.Location, visitors bool) (history.Point, error)
}

// History returns svc with every series checked against the principal in
// its context: a counter's history needs read access to its name, a
// prefix's to the prefix, as reading the counters themselves does.
func (s *Service) History(svc HistoryReader) HistoryReader {
	return &guardedHistory{keys: s, svc: svc}
}

type guardedHistory struct {
	keys *Service
	svc  HistoryReader
}

func (g *guardedHistory) Parse(r history.Request) (history.Query, error) { return g.svc.Parse(r) }

func (g *guardedHistory) Series(ctx context.Context, q history.Query) (*history.Series, error) {
	p := FromContext(ctx)
	check := p.Prefix(q.Prefix, Read)
	if q.Name != "" {
		check = p.Name(q.Name, Read)
	}
	if err := g.keys.deny(check); err != nil {
		return nil, err
	}
	return g.svc.Series(ctx, q)
}

func (g *guardedHistory) Today(ctx context.Context, name string, zone *time.Location, visitors bool) (history.Point, error) {
	if err := g.keys.deny(FromContext(ctx).Name(name, Read)); err != nil {
		return history.Point{}, err
	}
	return g.svc.Today(ctx, name, zone, visitors)
}

// Webhooks returns svc with every call checked against the principal in
// its context: a hook is the admin's, or a write key's whose prefixes take
// in the hook's counter name or prefix. A key sees only such hooks in the
// list, and the hooks it creates count against its own limit.
func (s *Service) Webhooks(svc webhooks.API) webhooks.API {
	return &guardedWebhooks{keys: s, svc: svc}
}

type guardedWebhooks struct {
	keys *Service
	svc  webhooks.API
}

// hook returns the hook id if the principal of ctx may manage it.
func (g *guardedWebhooks) hook(ctx context.Context, id int64) (*webhooks.Hook, error) {
	p := FromContext(ctx)
	if err := g.keys.deny(p.scope(Write)); err != nil {
		return nil, err
	}
	h, err := g.svc.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return h, g.keys.deny(p.hook(h.Target, h.IsPrefix))
}

func (g *guardedWebhooks) Create(ctx context.Context, req webhooks.CreateRequest) (*webhooks.Hook, error) {
	p := FromContext(ctx)
	check := p.scope(Write)
	switch {
	case check != nil, req.Name != "" && req.Prefix != "": // both given: the domain refuses it
	case req.Prefix != "":
		check = p.hook(req.Prefix, true)
	case req.Name != "":
		check = p.hook(req.Name, false)
	}
	if err := g.keys.deny(check); err != nil {
		return nil, err
	}
	req.Owner = p.KeyID()
	return g.svc.Create(ctx, req)
}

func (g *guardedWebhooks) Get(ctx context.Context, id int64) (*webhooks.Hook, error) {
	return g.hook(ctx, id)
}

func (g *guardedWebhooks) List(ctx context.Context) ([]webhooks.Hook, error) {
	p := FromContext(ctx)
	if err := g.keys.deny(p.scope(Write)); err != nil {
		return nil, err
	}
	list, err := g.svc.List(ctx)
	if err != nil || p.IsAdmin() {
		return list, err
	}
	kept := list[:0]
	for _, h := range list {
		if p.hook(h.Target, h.IsPrefix) == nil {
			kept = append(kept, h)
		}
	}
	return kept, nil
}

func (g *guardedWebhooks) Delete(ctx context.Context, id int64) error {
	if _, err := g.hook(ctx, id); err != nil {
		return err
	}
	return g.svc.Delete(ctx, id)
}

func (g *guardedWebhooks) Enable(ctx context.Context, id int64) (*webhooks.Hook, error) {
	if _, err := g.hook(ctx, id); err != nil {
		return nil, err
	}
	return g.svc.Enable(ctx, id)
}

func (g *guardedWebhooks) Rotate(ctx context.Context, id int64) (*webhooks.Hook, error) {
	if _, err := g.hook(ctx, id); err != nil {
		return nil, err
	}
	return g.svc.Rotate(ctx, id)
}

func (g *guardedWebhooks) Deliveries(ctx context.Context, id int64, limit int) ([]webhooks.Delivery, error) {
	if _, err := g.hook(ctx, id); err != nil {
		return nil, err
	}
	return g.svc.Deliveries(ctx, id, limit)
}

// LiveOpener opens live-update streams (live.Hub).
type LiveOpener interface {
	Counter(ctx context.Context, r live.Request) (*live.Stream, error)
	Prefix(ctx context.Context, r live.Request) (*live.Stream, error)
}

// Live returns o with every stream checked against the principal in its
// context, as reads are: a counter's stream needs read access to its name,
// a prefix's to the prefix. Only the public page-hit streams, which app/
// opens on the hub itself for public names, stream a counter that does not
// exist.
func (s *Service) Live(o LiveOpener) LiveOpener { return &guardedLive{keys: s, o: o} }

type guardedLive struct {
	keys *Service
	o    LiveOpener
}

func (g *guardedLive) Counter(ctx context.Context, r live.Request) (*live.Stream, error) {
	if err := g.keys.deny(FromContext(ctx).Name(r.Name, Read)); err != nil {
		return nil, err
	}
	r.Missing = false
	return g.o.Counter(ctx, r)
}

func (g *guardedLive) Prefix(ctx context.Context, r live.Request) (*live.Stream, error) {
	if err := g.keys.deny(FromContext(ctx).Prefix(r.Prefix, Read)); err != nil {
		return nil, err
	}
	return g.o.Prefix(ctx, r)
}
