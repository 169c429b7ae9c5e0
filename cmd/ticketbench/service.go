package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// runService creates fresh boards through the API, then times the workers'
// POSTs and verifies every board's numbers through the list endpoint.
func runService(ctx context.Context, c config) (time.Duration, error) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConnsPerHost: c.boards * c.workers, MaxConnsPerHost: c.boards * c.workers}}
	company := time.Now().UnixNano() // a new company per run: slugs never collide
	boards := make([]int64, c.boards)
	for i := range boards {
		var b struct{ ID int64 }
		body := fmt.Sprintf(`{"company_id": %d, "slug": "BENCH%d", "title": "ticketbench"}`, company, i)
		if err := call(ctx, client, c, "POST", "/v1/boards", body, http.StatusCreated, &b); err != nil {
			return 0, err
		}
		boards[i] = b.ID
	}

	elapsed, err := runWorkers(c, boards, func(board int64, title string) error {
		body := fmt.Sprintf(`{"title": %q, "description": %q}`, title, c.description)
		return call(ctx, client, c, "POST", fmt.Sprintf("/v1/boards/%d/tickets", board), body, http.StatusCreated, nil)
	})
	if err != nil {
		return 0, err
	}
	for _, board := range boards {
		if err := verifyService(ctx, client, c, board); err != nil {
			return 0, err
		}
	}
	return elapsed, nil
}

// verifyService pages through a board's tickets: exactly 1..n, in order.
func verifyService(ctx context.Context, client *http.Client, c config, board int64) error {
	want := int64(1)
	after := int64(0)
	for {
		var page struct {
			Tickets []struct {
				LocalID int64 `json:"local_id"`
			}
			NextAfter *int64 `json:"next_after"`
		}
		path := fmt.Sprintf("/v1/boards/%d/tickets?limit=1000&after=%d", board, after)
		if err := call(ctx, client, c, "GET", path, "", http.StatusOK, &page); err != nil {
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
	if got := want - 1; got != int64(c.workers*c.per) {
		return fmt.Errorf("board %d: %d tickets, want %d", board, got, c.workers*c.per)
	}
	return nil
}

// call sends one request and decodes the answer into out (when not nil).
func call(ctx context.Context, client *http.Client, c config, method, path, body string, status int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, bytes.NewBufferString(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != status {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}
