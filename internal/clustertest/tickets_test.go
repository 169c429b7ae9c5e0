package clustertest_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
)

// ticketLoad creates tickets on one board through every process and reads
// each back through the next process: no failure, no number handed out
// twice, no ticket missing from a read that starts after its creation was
// answered, and the board holds exactly the tickets that were answered.
func ticketLoad(t *testing.T, procs []*apptest.Env, workers int, d time.Duration) {
	t.Helper()
	res := procs[0].Do(t, "POST", "/v1/boards", fmt.Sprintf(`{"company_id": 1, "slug": "G%d", "title": "cluster"}`, time.Now().UnixNano()%1e9))
	if res.Status != 201 {
		t.Fatalf("creating the board: %d %s", res.Status, res.Body)
	}
	var board struct{ ID int64 }
	res.Decode(t, &board)
	l := newLoad(procs)
	var mu sync.Mutex
	numbers := map[int64]bool{}
	l.drive(workers, d, func(_ *rand.Rand, writer, reader *apptest.Env) {
		l.requests.Add(1)
		start := time.Now()
		res, err := writer.TryDo("POST", fmt.Sprintf("/v1/boards/%d/tickets", board.ID), `{"title": "t"}`)
		var created struct {
			ID      int64
			LocalID int64 `json:"local_id"`
		}
		answeredAt := time.Since(l.began)
		if !l.ok(err, res, 201, "ticket", &created) {
			return
		}
		l.written(time.Since(start))
		mu.Lock()
		if numbers[created.LocalID] {
			l.samples.add("ticket number %d handed out twice", created.LocalID)
			l.failed.Add(1)
		}
		numbers[created.LocalID] = true
		mu.Unlock()
		l.reads.Add(1)
		began := time.Since(l.began)
		res, err = reader.TryDo("GET", fmt.Sprintf("/v1/boards/%d/tickets/%d", board.ID, created.LocalID), "")
		var read struct{ ID int64 }
		if err == nil && res.Status == 404 {
			l.staleRead(began-answeredAt, "ticket %d not found after its creation was answered", created.LocalID)
		} else if l.ok(err, res, 200, "ticket read", &read) && read.ID != created.ID {
			l.failed.Add(1)
			l.samples.add("ticket %d read back with id %d; created with %d", created.LocalID, read.ID, created.ID)
		}
	})
	l.check(t, d)

	stored := 0
	for after := int64(0); ; {
		res := procs[0].Do(t, "GET", fmt.Sprintf("/v1/boards/%d/tickets?limit=1000&after=%d", board.ID, after), "")
		var page struct {
			Tickets []struct {
				LocalID int64 `json:"local_id"`
			}
			NextAfter *int64 `json:"next_after"`
		}
		res.Decode(t, &page)
		stored += len(page.Tickets)
		if page.NextAfter == nil {
			break
		}
		after = *page.NextAfter
	}
	if stored != len(numbers) {
		t.Errorf("the board holds %d tickets; %d creations were answered", stored, len(numbers))
	}
}
