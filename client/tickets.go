package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Board hands out ticket numbers: the first ticket of board NINJA is
// NINJA-1.
type Board struct {
	ID        int64     `json:"id"`
	CompanyID int64     `json:"company_id"`
	Slug      string    `json:"slug"`
	Title     string    `json:"title"`
	CreatedAt time.Time `json:"created_at"`
}

// Ticket is a numbered ticket of a board.
type Ticket struct {
	ID          int64     `json:"id"`
	BoardID     int64     `json:"board_id"`
	LocalID     int64     `json:"local_id"`
	Key         string    `json:"key"` // such as NINJA-7
	Title       string    `json:"title"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
}

// CreateBoard makes a board of the company. The slug is upper-cased and
// must then match ^[A-Z][A-Z0-9]{0,9}$. Errors: Conflict (the company has
// the slug), InvalidArgument.
func (c *Client) CreateBoard(ctx context.Context, companyID int64, slug, title string) (Board, error) {
	body, err := jsonBody(map[string]any{"company_id": companyID, "slug": slug, "title": title})
	if err != nil {
		return Board{}, err
	}
	var out Board
	_, err = c.call(ctx, request{method: http.MethodPost, path: "/boards", body: body, retry: retryUnsent}, &out)
	return out, err
}

// Board returns the board id. Errors: NotFound.
func (c *Client) Board(ctx context.Context, id int64) (Board, error) {
	var out Board
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/boards/" + itoa(id)}, &out)
	return out, err
}

// CreateTicket takes the board's next number for a new ticket. It is not
// retried after a lost answer: a retry would take another number.
func (c *Client) CreateTicket(ctx context.Context, boardID int64, title, description string) (Ticket, error) {
	body, err := jsonBody(map[string]string{"title": title, "description": description})
	if err != nil {
		return Ticket{}, err
	}
	var out Ticket
	_, err = c.call(ctx, request{method: http.MethodPost, path: "/boards/" + itoa(boardID) + "/tickets",
		body: body, retry: retryUnsent}, &out)
	return out, err
}

// Ticket returns ticket localID of the board. Errors: NotFound.
func (c *Client) Ticket(ctx context.Context, boardID, localID int64) (Ticket, error) {
	var out Ticket
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/boards/" + itoa(boardID) + "/tickets/" + itoa(localID)}, &out)
	return out, err
}

// TicketByKey returns the company's ticket of a key such as NINJA-7.
func (c *Client) TicketByKey(ctx context.Context, companyID int64, key string) (Ticket, error) {
	var out Ticket
	_, err := c.call(ctx, request{method: http.MethodGet, path: "/companies/" + itoa(companyID) + "/tickets/" + esc(key)}, &out)
	return out, err
}

// Tickets yields the board's tickets by number, following the pages.
func (c *Client) Tickets(ctx context.Context, boardID int64) iter.Seq2[Ticket, error] {
	return func(yield func(Ticket, error) bool) {
		var after int64
		for {
			q := url.Values{}
			if after > 0 {
				q.Set("after", itoa(after))
			}
			var page struct {
				Tickets   []Ticket `json:"tickets"`
				NextAfter *int64   `json:"next_after"`
			}
			if _, err := c.call(ctx, request{method: http.MethodGet, path: "/boards/" + itoa(boardID) + "/tickets", query: q}, &page); err != nil {
				yield(Ticket{}, err)
				return
			}
			for _, t := range page.Tickets {
				if !yield(t, nil) {
					return
				}
			}
			if page.NextAfter == nil || *page.NextAfter <= after {
				return
			}
			after = *page.NextAfter
		}
	}
}

// DeleteTicket deletes a ticket; its number stays used. Errors: NotFound.
func (c *Client) DeleteTicket(ctx context.Context, boardID, localID int64) error {
	_, err := c.call(ctx, request{method: http.MethodDelete, path: "/boards/" + itoa(boardID) + "/tickets/" + itoa(localID)}, nil)
	return err
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
