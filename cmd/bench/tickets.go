package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// ticketWorkload is the seed's ticket workload: workers per board, each
// creating its tickets one after another, measured two ways:
//
//   - service: POST /v1/boards/{id}/tickets (the board's number from a
//     coalesced counter, rows group-committed);
//   - raw: the seed's technique straight from Go, per ticket UPDATE board
//     SET max_ticket_id = LAST_INSERT_ID(max_ticket_id + 1), then INSERT
//     INTO ticket, each its own autocommitted round trip, on the service's
//     own tables plus the seed's board.max_ticket_id.
//
// Both check that every board ends with exactly the numbers 1 to
// workers*each.
type ticketWorkload struct {
	boards, workers, each int
	description           string
}

func (w ticketWorkload) total() int { return w.boards * w.workers * w.each }

// service creates fresh boards through the API, then times the workers'
// POSTs and checks every board's numbers through the list endpoint.
func (w ticketWorkload) service(ctx context.Context, url string) (load, error) {
	conns := w.boards * w.workers
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
	defer client.CloseIdleConnections()
	company := time.Now().UnixNano() // a new company per run: slugs never collide
	boards := make([]int64, w.boards)
	for i := range boards {
		body := fmt.Sprintf(`{"company_id": %d, "slug": "BENCH%d", "title": "bench"}`, company, i)
		res, err := call(ctx, client, "POST", url+"/v1/boards", body, http.StatusCreated)
		if err != nil {
			return load{}, err
		}
		var board struct{ ID int64 }
		if err := json.Unmarshal(res, &board); err != nil {
			return load{}, err
		}
		boards[i] = board.ID
	}
	l, err := w.run(boards, func(board int64, title string) error {
		body := fmt.Sprintf(`{"title": %q, "description": %q}`, title, w.description)
		_, err := call(ctx, client, "POST", fmt.Sprintf("%s/v1/boards/%d/tickets", url, board), body, http.StatusCreated)
		return err
	})
	if err != nil {
		return l, err
	}
	for _, board := range boards {
		if err := w.checkService(ctx, client, url, board); err != nil {
			return l, err
		}
	}
	return l, nil
}

// checkService pages through a board's tickets: exactly 1 to n, in order.
func (w ticketWorkload) checkService(ctx context.Context, client *http.Client, url string, board int64) error {
	want, after := int64(1), int64(0)
	for {
		res, err := call(ctx, client, "GET", fmt.Sprintf("%s/v1/boards/%d/tickets?limit=1000&after=%d", url, board, after), "", http.StatusOK)
		if err != nil {
			return err
		}
		var page struct {
			Tickets []struct {
				LocalID int64 `json:"local_id"`
			}
			NextAfter *int64 `json:"next_after"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			return err
		}
		for _, t := range page.Tickets {
			if t.LocalID != want {
				return fmt.Errorf("board %d: found number %d where %d belongs", board, t.LocalID, want)
			}
			want++
		}
		if page.NextAfter == nil {
			break
		}
		after = *page.NextAfter
	}
	if got := want - 1; got != int64(w.workers*w.each) {
		return fmt.Errorf("board %d: %d tickets, want %d", board, got, w.workers*w.each)
	}
	return nil
}

// raw times the seed's technique on a fresh database.
func (w ticketWorkload) raw(ctx context.Context, dsn string) (load, error) {
	db, err := openRaw(ctx, dsn, w.boards*w.workers)
	if err != nil {
		return load{}, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "ALTER TABLE board ADD COLUMN max_ticket_id BIGINT NOT NULL DEFAULT 0"); err != nil {
		return load{}, err
	}
	boards := make([]int64, w.boards)
	for i := range boards {
		res, err := db.ExecContext(ctx, "INSERT INTO board (company_id, slug, title, created_at) VALUES (1, ?, 'bench', ?)",
			fmt.Sprintf("BENCH%d", i), time.Now().UTC())
		if err != nil {
			return load{}, err
		}
		if boards[i], err = res.LastInsertId(); err != nil {
			return load{}, err
		}
	}
	l, err := w.run(boards, func(board int64, title string) error {
		res, err := db.ExecContext(ctx, "UPDATE board SET max_ticket_id = LAST_INSERT_ID(max_ticket_id + 1) WHERE id = ?", board)
		if err != nil {
			return err
		}
		local, err := res.LastInsertId()
		if err != nil {
			return err
		}
		_, err = db.ExecContext(ctx, "INSERT INTO ticket (board_id, local_id, title, description, created_at) VALUES (?, ?, ?, ?, ?)",
			board, local, title, w.description, time.Now().UTC())
		return err
	})
	if err != nil {
		return l, err
	}
	return l, w.checkRaw(ctx, db)
}

func (w ticketWorkload) checkRaw(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "SELECT board_id, MIN(local_id), MAX(local_id), COUNT(DISTINCT local_id) FROM ticket GROUP BY board_id")
	if err != nil {
		return err
	}
	defer rows.Close()
	want := int64(w.workers * w.each)
	n := 0
	for rows.Next() {
		var board, lo, hi, distinct int64
		if err := rows.Scan(&board, &lo, &hi, &distinct); err != nil {
			return err
		}
		if lo != 1 || hi != want || distinct != want {
			return fmt.Errorf("raw board %d: numbers %d to %d, %d distinct; want 1 to %d", board, lo, hi, distinct, want)
		}
		n++
	}
	if n != w.boards {
		return fmt.Errorf("raw: tickets on %d boards, want %d", n, w.boards)
	}
	return rows.Err()
}

// run starts the workers of every board at once, each creating its
// tickets with create(board, title), and reports the tickets per second
// of the whole workload, or the first error.
func (w ticketWorkload) run(boards []int64, create func(board int64, title string) error) (load, error) {
	start := time.Now()
	errs := make(chan error, len(boards)*w.workers)
	var wg sync.WaitGroup
	for _, board := range boards {
		for worker := range w.workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range w.each {
					if err := create(board, fmt.Sprintf("worker %d ticket %d", worker, i)); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	if err := <-errs; err != nil {
		return load{}, err
	}
	n := int64(w.total())
	return load{RPS: float64(n) / elapsed.Seconds(), Requests: n}, nil
}
