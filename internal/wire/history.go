package wire

import (
	"countersvc/app"
	"countersvc/history"
	"countersvc/storage"
)

// buildHistory: counts per hour, day and month, read from the store's
// history (app/history.go serves them with the counters' routes).
func buildHistory(b *builder) (app.Capability, error) {
	b.history = history.NewService(storage.NewHistoryStore(b.s.DB), b.now)
	if b.s.Visitors != nil {
		b.history.Visitors = b.s.Visitors
	}
	return nil, nil
}
