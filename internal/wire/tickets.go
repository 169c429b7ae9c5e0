package wire

import (
	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/tickets"
)

// buildTickets: boards and ticket numbers, a consumer of the counters
// service.
func buildTickets(b *builder) (app.Capability, error) {
	b.s.TicketStore = storage.NewTicketStore(b.s.DB, storage.TicketStoreOptions{})
	b.s.Tickets = tickets.NewService(b.s.TicketStore, b.s.Counters)
	return app.Tickets(b.s.Tickets), nil
}
