// Package keys owns the API keys: who a request comes from (the admin
// token, a loopback client of a service without one, or an app's key), what
// each key may touch (its scopes, counter-name prefixes and companies), and
// the one check of both. It knows nothing of HTTP or SQL: app/ hands it the
// bearer secret and whether the client is on this machine, storage/ keeps
// the keys. It knows no domain's types either: app/ says, route by route,
// which Resource a request touches (app/access.go), and Principal.May
// answers.
package keys

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/countersvc/countersvc/counters"
)

// Scope is one kind of access a key grants.
type Scope string

// The scopes. Write does not include read: a key that only counts sales
// cannot read other tallies under its prefix unless it is given read too.
const (
	ScopeRead  Scope = "read"  // GET of counters, lists, badges, boards, tickets
	ScopeWrite Scope = "write" // increment, set, delete, batch, reset; boards and tickets
	ScopeAdmin Scope = "admin" // everything, keys included, whatever the prefixes
)

// Key is an API key as the service shows it: never its secret, which is
// returned once by Create and kept only as a hash.
type Key struct {
	ID        int64
	Name      string
	Scopes    []Scope
	Prefixes  []string // counter names the key may touch; "" is every non-reserved name
	Companies []int64  // companies whose boards and tickets the key may use
	CreatedAt time.Time
	ExpiresAt *time.Time // nil: never
	// LastUsedAt is approximate: usage is written at most once a minute
	// per process (see Service.TouchEvery).
	LastUsedAt *time.Time
	RevokedAt  *time.Time // set by Revoke; a revoked key is refused and hidden
}

func (k *Key) has(s Scope) bool { return slices.Contains(k.Scopes, s) }

// expired reports whether the key is past its expiry at now.
func (k *Key) expired(now time.Time) bool { return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) }

// MaxNameLen is the longest key name, in characters.
const MaxNameLen = 255

// Limits of a key's lists.
const (
	MaxPrefixes  = 100
	MaxCompanies = 1000
)

// CreateRequest is a new key's settings.
type CreateRequest struct {
	Name      string
	Scopes    []Scope
	Prefixes  []string
	Companies []int64
	ExpiresAt *time.Time
}

// Validate returns EINVALID for a bad name, no or unknown scopes, a bad
// prefix or company id, or an expiry that is not in the future of now. It
// drops repeated entries.
func (r *CreateRequest) Validate(now time.Time) error {
	if r.Name == "" || utf8.RuneCountInString(r.Name) > MaxNameLen {
		return counters.Errorf(counters.EINVALID, "A key's \"name\" must be 1 to %d characters long.", MaxNameLen)
	}
	// Characters, not bytes, as the column counts them: not
	// counters.ValidateName, whose 255 are bytes.
	if !utf8.ValidString(r.Name) || strings.ContainsFunc(r.Name, func(c rune) bool { return c < 0x20 || c == 0x7f }) {
		return counters.Errorf(counters.EINVALID, "A key's \"name\" must be valid UTF-8 without control characters.")
	}
	if len(r.Scopes) == 0 {
		return counters.Errorf(counters.EINVALID, "A key needs at least one scope: read, write or admin.")
	}
	for _, s := range r.Scopes {
		if s != ScopeRead && s != ScopeWrite && s != ScopeAdmin {
			return counters.Errorf(counters.EINVALID, "Unknown scope %q; the scopes are read, write and admin.", s)
		}
	}
	if len(r.Prefixes) > MaxPrefixes {
		return counters.Errorf(counters.EINVALID, "A key may have at most %d prefixes.", MaxPrefixes)
	}
	for _, p := range r.Prefixes {
		if p == "" {
			continue // every non-reserved name
		}
		if err := counters.ValidateName(p); err != nil {
			return counters.Errorf(counters.EINVALID, "prefixes: %s", counters.ErrorMessage(err))
		}
	}
	if len(r.Companies) > MaxCompanies {
		return counters.Errorf(counters.EINVALID, "A key may have at most %d companies.", MaxCompanies)
	}
	for _, c := range r.Companies {
		if c < 1 {
			return counters.Errorf(counters.EINVALID, "companies: company ids are positive integers, not %d.", c)
		}
	}
	if r.ExpiresAt != nil && !r.ExpiresAt.After(now) {
		return counters.Errorf(counters.EINVALID, "\"expires_at\" must be in the future.")
	}
	r.Scopes = dedupe(r.Scopes)
	r.Prefixes = dedupe(r.Prefixes)
	r.Companies = dedupe(r.Companies)
	return nil
}

// dedupe drops repeats, keeping the first of each, and never returns nil,
// so that an empty list is shown as [] rather than null.
func dedupe[T comparable](in []T) []T {
	out := make([]T, 0, len(in))
	for _, v := range in {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// Store is what the keys need from persistence; storage/ implements it
// against MySQL.
type Store interface {
	// Create stores k with the hash of its secret and sets its ID.
	Create(ctx context.Context, k *Key, hash [32]byte) error
	// ByHash returns the key of a secret's hash, revoked ones included.
	// Returns ENOTFOUND when no key has that hash.
	ByHash(ctx context.Context, hash [32]byte) (*Key, error)
	// Get returns a key that is not revoked, else ENOTFOUND.
	Get(ctx context.Context, id int64) (*Key, error)
	// List returns the keys that are not revoked, by id.
	List(ctx context.Context) ([]Key, error)
	// Revoke marks a key revoked at the given time. Returns ENOTFOUND when
	// there is no such key or it is revoked already.
	Revoke(ctx context.Context, id int64, at time.Time) error
	// Touch records that the keys were used at the given time.
	Touch(ctx context.Context, ids []int64, at time.Time) error
}
