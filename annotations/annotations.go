// Package annotations is the domain of annotations: a short text on a
// counter name or a prefix at a moment ("price cut", "newsletter sent"),
// which history and breakdown answers and the dashboard's charts show
// beside the counts of their range. It owns the annotation, its rules
// (the text, exactly one of name and prefix, the moment), which
// annotations a name or a prefix sees, and the narrow Store it needs. It
// knows nothing of SQL or HTTP (storage/annotations.go keeps them,
// app/annotations.go serves them); who may read or write one is the keys'
// question about the name or prefix it annotates.
package annotations

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/history"
)

// MaxText is the most characters (Unicode code points) a text has.
const MaxText = 280

// MaxList is the most annotations one answer holds, the earliest first.
const MaxList = 1000

// The moments an annotation may stand at: what MySQL's DATETIME keeps.
var (
	minAt = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	maxAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// An Annotation is a text on a counter name (IsPrefix false) or on every
// counter under a prefix, at a moment.
type Annotation struct {
	ID        int64
	Target    string // the name, or the prefix
	IsPrefix  bool
	At        time.Time // UTC, microseconds
	Text      string
	CreatedAt time.Time
}

// CreateRequest is an annotation as a client asks for it: exactly one of
// Name and Prefix; At zero means now.
type CreateRequest struct {
	Name, Prefix string
	At           time.Time
	Text         string
}

// Validate checks r: EINVALID for a text that is empty (or blank), longer
// than MaxText characters, not UTF-8 or holding control characters; for
// both or neither of name and prefix, a bad name or prefix, or a moment
// outside 1970 to 9999. EPERMISSION for a reserved name or prefix, which
// the API may not change, as for counters.
func (r CreateRequest) Validate() error {
	target, _, err := checkTarget(r.Name, r.Prefix)
	if err != nil {
		return err
	}
	if counters.IsReserved(target) {
		return counters.Errorf(counters.EPERMISSION, "Names starting with %q are reserved and cannot be annotated through the API.", counters.ReservedPrefix)
	}
	if err := validateText(r.Text); err != nil {
		return err
	}
	if !r.At.IsZero() && (r.At.Before(minAt) || !r.At.Before(maxAt)) {
		return counters.Errorf(counters.EINVALID, "\"at\" must lie between 1970 and 9999.")
	}
	return nil
}

func validateText(text string) error {
	switch n := utf8.RuneCountInString(text); {
	case strings.TrimSpace(text) == "":
		return counters.Errorf(counters.EINVALID, "\"text\" must not be empty.")
	case n > MaxText:
		return counters.Errorf(counters.EINVALID, "\"text\" must be at most %d characters, not %d.", MaxText, n)
	case !utf8.ValidString(text):
		return counters.Errorf(counters.EINVALID, "\"text\" must be valid UTF-8.")
	case strings.ContainsFunc(text, isControl):
		return counters.Errorf(counters.EINVALID, "\"text\" must be one line without control characters.")
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// checkTarget checks that exactly one of name and prefix is given, and that
// it is a valid name (a prefix is one too, never empty).
func checkTarget(name, prefix string) (target string, isPrefix bool, err error) {
	switch {
	case name != "" && prefix != "":
		return "", false, counters.Errorf(counters.EINVALID, "Give either \"name\" or \"prefix\", not both.")
	case name != "":
		return name, false, counters.ValidateName(name)
	case prefix != "":
		if err := counters.ValidateName(prefix); err != nil {
			return "", false, counters.Errorf(counters.EINVALID, "prefix: %s", counters.ErrorMessage(err))
		}
		return prefix, true, nil
	}
	return "", false, counters.Errorf(counters.EINVALID, "Give \"name\" or \"prefix\" (a counter's name, or a non-empty prefix).")
}

// Query asks for the annotations that a name (IsPrefix false) or a prefix
// sees, with At in [From, To); a zero From or To leaves that end open.
//
// A name sees the annotations on itself and on every prefix that holds it;
// a prefix those on itself, on every prefix that holds it, and on every
// name (and narrower prefix) under it. So a history or breakdown of a name
// or a prefix shows every note that concerns what it counts.
type Query struct {
	Target   string
	IsPrefix bool
	From, To time.Time
}

// QueryRequest is a Query as a client spells it (?name= or ?prefix=,
// ?from=, ?to=, ?tz=): from and to as history reads them.
type QueryRequest struct {
	Name, Prefix   string
	From, To, Zone string
}

// Parse checks r: EINVALID for both or neither of name and prefix, a bad
// one, an unknown zone, a time history's parser refuses, or from not
// before to.
func (r QueryRequest) Parse() (Query, error) {
	target, isPrefix, err := checkTarget(r.Name, r.Prefix)
	if err != nil {
		return Query{}, err
	}
	q := Query{Target: target, IsPrefix: isPrefix}
	zone := time.UTC
	if r.Zone != "" {
		if zone, err = history.LoadZone(r.Zone); err != nil {
			return q, err
		}
	}
	if r.From != "" {
		if q.From, err = history.ParseTime("from", r.From, zone); err != nil {
			return q, err
		}
	}
	if r.To != "" {
		if q.To, err = history.ParseTime("to", r.To, zone); err != nil {
			return q, err
		}
	}
	if r.From != "" && r.To != "" && !q.From.Before(q.To) {
		return q, counters.Errorf(counters.EINVALID, "from (%s) must be before to (%s).", r.From, r.To)
	}
	return q, nil
}

// Store is what annotations need from persistence.
type Store interface {
	// CreateAnnotation inserts a, setting its ID.
	CreateAnnotation(ctx context.Context, a *Annotation) error
	// Annotation returns the annotation id; ENOTFOUND when there is none.
	Annotation(ctx context.Context, id int64) (*Annotation, error)
	// Annotations returns at most limit of those q sees, by At then ID.
	Annotations(ctx context.Context, q Query, limit int) ([]Annotation, error)
	// DeleteAnnotation removes the annotation id; ENOTFOUND when there is none.
	DeleteAnnotation(ctx context.Context, id int64) error
}

// Service creates, lists and deletes annotations.
type Service struct {
	store Store
	now   func() time.Time
}

// NewService returns the annotations kept in store; now (the store's
// clock) is an annotation's default moment and its created_at.
func NewService(store Store, now func() time.Time) *Service {
	if now == nil {
		now = time.Now
	}
	return &Service{store: store, now: now}
}

// Create validates r (see CreateRequest.Validate) and keeps it.
func (s *Service) Create(ctx context.Context, r CreateRequest) (*Annotation, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	a := &Annotation{Target: r.Name, Text: r.Text, At: r.At.UTC().Truncate(time.Microsecond), CreatedAt: now}
	if r.Prefix != "" {
		a.Target, a.IsPrefix = r.Prefix, true
	}
	if r.At.IsZero() {
		a.At = now
	}
	if err := s.store.CreateAnnotation(ctx, a); err != nil {
		return nil, err
	}
	return a, nil
}

// Get returns the annotation id, or ENOTFOUND.
func (s *Service) Get(ctx context.Context, id int64) (*Annotation, error) {
	return s.store.Annotation(ctx, id)
}

// List returns the first MaxList annotations q sees, by At, and whether
// there were more.
func (s *Service) List(ctx context.Context, q Query) (list []Annotation, truncated bool, err error) {
	list, err = s.store.Annotations(ctx, q, MaxList+1)
	if err != nil {
		return nil, false, err
	}
	if len(list) > MaxList {
		return list[:MaxList], true, nil
	}
	return list, false, nil
}

// Delete removes the annotation id, or returns ENOTFOUND.
func (s *Service) Delete(ctx context.Context, id int64) error {
	return s.store.DeleteAnnotation(ctx, id)
}

// Holders returns the prefixes that hold target, target itself included,
// shortest first: the cuts of target at each of its characters' ends (a
// prefix is a valid name, so it never ends inside a character).
func Holders(target string) []string {
	var out []string
	for i := range target {
		if i > 0 {
			out = append(out, target[:i])
		}
	}
	return append(out, target)
}
