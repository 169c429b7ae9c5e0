// Package tickets numbers tickets on boards, Jira-style (NINJA-1, NINJA-2,
// ...). It is a consumer of the counters domain: each board's sequence is a
// reserved counter incremented through counters.Service, never through SQL.
package tickets

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersvc/countersvc/counters"
)

// Limits of a board's and a ticket's text, in characters (runes).
const (
	MaxSlugLen        = 10
	MaxTitleLen       = 255
	MaxDescriptionLen = 3000
)

// Board belongs to a company; its slug is unique within the company and
// never changes, so a board may be cached for as long as the process runs.
type Board struct {
	ID        int64
	CompanyID int64
	Slug      string
	Title     string
	CreatedAt time.Time
}

// BoardCreate is a request for a new board.
type BoardCreate struct {
	CompanyID int64
	Slug      string
	Title     string
}

// Normalize upper-cases the slug and validates the request. Returns
// EINVALID for a company id below 1, a bad slug or a bad title.
func (r *BoardCreate) Normalize() error {
	if r.CompanyID < 1 {
		return counters.Errorf(counters.EINVALID, "company_id must be a positive integer.")
	}
	slug, err := NormalizeSlug(r.Slug)
	if err != nil {
		return err
	}
	r.Slug = slug
	return validateText("title", r.Title, 1, MaxTitleLen)
}

// NormalizeSlug upper-cases s and checks it against ^[A-Z][A-Z0-9]{0,9}$.
// Only ASCII letters are upper-cased: a non-ASCII letter whose upper case
// happens to be ASCII (the dotless ı, the long ſ) is refused rather than
// silently turned into a different slug.
func NormalizeSlug(s string) (string, error) {
	if s == "" || len(s) > MaxSlugLen {
		return "", counters.Errorf(counters.EINVALID, "Slug must be 1 to %d letters or digits, starting with a letter.", MaxSlugLen)
	}
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
			b[i] = c
		}
		letter := 'A' <= c && c <= 'Z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return "", counters.Errorf(counters.EINVALID, "Slug must be 1 to %d letters or digits, starting with a letter.", MaxSlugLen)
		}
	}
	return string(b), nil
}

// SequenceName is the reserved counter that numbers a board's tickets. The
// leading "_" keeps it out of bulk resets and makes it read-only over HTTP.
func SequenceName(boardID int64) string {
	return counters.ReservedPrefix + "tickets/board/" + strconv.FormatInt(boardID, 10)
}

// validateText checks that s has lo to hi characters and, when lo > 0,
// is not only white space: a title of blanks is as empty as no title.
func validateText(field, s string, lo, hi int) error {
	if !utf8.ValidString(s) {
		return counters.Errorf(counters.EINVALID, "%s must be valid UTF-8.", field)
	}
	n := utf8.RuneCountInString(s)
	if n < lo || n > hi || (lo > 0 && strings.TrimSpace(s) == "") {
		if lo > 0 {
			return counters.Errorf(counters.EINVALID, "%s must be %d to %d characters long and not blank; it has %d.", field, lo, hi, n)
		}
		return counters.Errorf(counters.EINVALID, "%s must be at most %d characters long; it has %d.", field, hi, n)
	}
	return nil
}
