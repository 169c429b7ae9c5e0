package cache_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"countersvc/internal/apptest"
	"countersvc/internal/config"
	"countersvc/internal/testenv"
)

func newBoard(t *testing.T, e *apptest.Env, slug string) int64 {
	t.Helper()
	r := e.Do(t, "POST", "/v1/boards", `{"company_id": 1, "slug": "`+slug+`", "title": "Board"}`)
	var b struct{ ID int64 }
	r.Decode(t, &b)
	if r.Status != 201 {
		t.Fatalf("board: %d %s", r.Status, r.Body)
	}
	return b.ID
}

func newTicket(t *testing.T, e *apptest.Env, board int64) int64 {
	t.Helper()
	r := e.Do(t, "POST", fmt.Sprintf("/v1/boards/%d/tickets", board), `{"title": "a ticket"}`)
	var tk struct {
		LocalID int64 `json:"local_id"`
	}
	r.Decode(t, &tk)
	if r.Status != 201 {
		t.Fatalf("ticket: %d %s", r.Status, r.Body)
	}
	return tk.LocalID
}

// A ticket read once is served from Redis (even after its row is removed
// behind the service's back), and a delete through the service is seen by
// the next read, by number and by key.
func TestTicketReadsAreCachedAndDeletesInvalidate(t *testing.T) {
	r := testenv.StartRedis(t)
	e := apptest.NewWithCache(t, r.URL())
	board := newBoard(t, e, "NINJA")
	one, two := newTicket(t, e, board), newTicket(t, e, board)
	path := func(n int64) string { return fmt.Sprintf("/v1/boards/%d/tickets/%d", board, n) }

	for i := 0; i < 2; i++ {
		if got := e.Do(t, "GET", path(one), ""); got.Status != 200 {
			t.Fatalf("GET: %d %s", got.Status, got.Body)
		}
	}
	if _, err := e.DB.Exec("DELETE FROM ticket WHERE board_id = ? AND local_id = ?", board, one); err != nil {
		t.Fatal(err)
	}
	if got := e.Do(t, "GET", path(one), ""); got.Status != 200 {
		t.Fatalf("the second read did not come from Redis: %d", got.Status)
	}

	byKey := fmt.Sprintf("/v1/companies/1/tickets/NINJA-%d", two)
	for i := 0; i < 2; i++ {
		if got := e.Do(t, "GET", byKey, ""); got.Status != 200 || !json.Valid(got.Body) {
			t.Fatalf("GET by key: %d %s", got.Status, got.Body)
		}
	}
	if got := e.Do(t, "DELETE", path(two), ""); got.Status != 204 {
		t.Fatalf("DELETE: %d %s", got.Status, got.Body)
	}
	if got := e.Do(t, "GET", path(two), ""); got.Status != 404 {
		t.Fatalf("GET after delete: %d %s", got.Status, got.Body)
	}
	if got := e.Do(t, "GET", byKey, ""); got.Status != 404 {
		t.Fatalf("GET by key after delete: %d %s", got.Status, got.Body)
	}
}

// A ticket that was not found is not remembered: it is found once created.
func TestTicketNotFoundIsNotCached(t *testing.T) {
	r := testenv.StartRedis(t)
	e := apptest.NewWithCache(t, r.URL())
	board := newBoard(t, e, "ROCK")
	path := fmt.Sprintf("/v1/boards/%d/tickets/1", board)
	if got := e.Do(t, "GET", path, ""); got.Status != 404 {
		t.Fatalf("before: %d", got.Status)
	}
	newTicket(t, e, board)
	if got := e.Do(t, "GET", path, ""); got.Status != 200 {
		t.Fatalf("after create: %d %s", got.Status, got.Body)
	}
}

// Readers race a delete: no read that starts after the delete was answered
// returns the ticket.
func TestNoReadAfterAnAnsweredDeleteReturnsTheTicket(t *testing.T) {
	r := testenv.StartRedis(t)
	e := apptest.NewWithCache(t, r.URL())
	board := newBoard(t, e, "RACE")
	for round := 0; round < 10; round++ {
		n := newTicket(t, e, board)
		path := fmt.Sprintf("/v1/boards/%d/tickets/%d", board, n)
		var deletedAt atomic.Int64 // unix nanos of the DELETE's answer; 0 before
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for w := 0; w < 4; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now().UnixNano()
					got, err := e.TryDo("GET", path, "")
					if err != nil {
						t.Error(err)
						return
					}
					if d := deletedAt.Load(); d != 0 && start > d && got.Status != 404 {
						t.Errorf("round %d: a read that began after the delete was answered got %d", round, got.Status)
						return
					}
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		if got := e.Do(t, "DELETE", path, ""); got.Status != 204 {
			t.Fatalf("DELETE: %d", got.Status)
		}
		deletedAt.Store(time.Now().UnixNano())
		time.Sleep(30 * time.Millisecond)
		close(stop)
		wg.Wait()
	}
}

// A page of a board's tickets lags creations by at most the list TTL.
func TestTicketListsLagByAtMostListTTL(t *testing.T) {
	r := testenv.StartRedis(t)
	const ttl = 300 * time.Millisecond
	e := apptest.NewWithCache(t, r.URL(), func(c *config.Config) { c.ListTTL = ttl })
	board := newBoard(t, e, "LIST")
	path := fmt.Sprintf("/v1/boards/%d/tickets", board)
	count := func() int {
		var p struct{ Tickets []json.RawMessage }
		e.Do(t, "GET", path, "").Decode(t, &p)
		return len(p.Tickets)
	}
	newTicket(t, e, board)
	if n := count(); n != 1 {
		t.Fatalf("first list: %d tickets", n)
	}
	newTicket(t, e, board)
	created := time.Now()
	for count() != 2 {
		if time.Since(created) > ttl+200*time.Millisecond {
			t.Fatalf("the list still misses a ticket created %v ago (TTL %v)", time.Since(created), ttl)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
