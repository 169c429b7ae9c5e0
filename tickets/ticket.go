package tickets

import (
	"strconv"
	"strings"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// Ticket is one numbered ticket. LocalID is its number on the board, handed
// out once and never again, also after the ticket is deleted.
type Ticket struct {
	ID          int64
	BoardID     int64
	LocalID     int64
	Key         string // "<slug>-<local id>", filled in by the service
	Title       string
	Description string
	CreatedAt   time.Time
}

// TicketCreate is a request for a new ticket.
type TicketCreate struct {
	Title       string
	Description string
}

// Validate returns EINVALID unless the title has 1 to 255 characters and
// the description at most 3000; characters, not bytes.
func (r *TicketCreate) Validate() error {
	if err := validateText("title", r.Title, 1, MaxTitleLen); err != nil {
		return err
	}
	return validateText("description", r.Description, 0, MaxDescriptionLen)
}

// FormatKey is a ticket's key, such as NINJA-7.
func FormatKey(slug string, localID int64) string {
	return slug + "-" + strconv.FormatInt(localID, 10)
}

// ParseKey splits a key such as NINJA-7 into its slug and number. The slug
// part is upper-cased like a board's slug, so ninja-7 names NINJA-7. Returns
// EINVALID when key is not <slug>-<positive number without leading zeros>.
func ParseKey(key string) (slug string, localID int64, err error) {
	bad := counters.Errorf(counters.EINVALID, "A ticket key looks like NINJA-7: the board's slug, a dash and the ticket's number.")
	s, num, ok := strings.Cut(key, "-")
	if !ok || num == "" || num[0] < '1' || num[0] > '9' {
		return "", 0, bad
	}
	slug, err = NormalizeSlug(s)
	if err != nil {
		return "", 0, bad
	}
	localID, err = strconv.ParseInt(num, 10, 64)
	if err != nil {
		return "", 0, bad
	}
	return slug, localID, nil
}

// ListFilter selects a page of a board's tickets in order of LocalID.
type ListFilter struct {
	After int64 // only tickets with a greater LocalID
	Limit int   // 0 means counters.DefaultListLimit
}

// Normalize applies the default limit and validates the filter.
func (f *ListFilter) Normalize() error {
	if f.Limit == 0 {
		f.Limit = counters.DefaultListLimit
	}
	if err := counters.ValidateLimit(int64(f.Limit)); err != nil {
		return err
	}
	if f.After < 0 {
		return counters.Errorf(counters.EINVALID, "after must not be negative.")
	}
	return nil
}

// Page is one page of a board's tickets; NextAfter is nil on the last page.
type Page struct {
	Tickets   []Ticket
	NextAfter *int64
}
