package wire

import (
	"countersvc/app"
	"countersvc/storage"
	"countersvc/tickets"
)

// buildTickets: boards and ticket numbers, a consumer of the counters
// service.
func buildTickets(b *builder) (app.Capability, error) {
	b.s.TicketStore = storage.NewTicketStore(b.s.DB, storage.TicketStoreOptions{})
	b.s.Tickets = tickets.NewService(b.s.TicketStore, b.s.Counters)
	return app.Tickets(b.s.Tickets), nil
}
