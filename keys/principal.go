package keys

import (
	"context"
	"slices"
	"strings"

	"github.com/countersvc/countersvc/counters"
)

// Principal is who a request comes from, once authenticated: the admin (the
// API token, or a loopback client when no token is set) or an app's key.
type Principal struct {
	key *Key // nil: the admin
}

// admin is the principal of the API token.
var admin = &Principal{}

// Admin returns the principal that may do everything.
func Admin() *Principal { return admin }

// KeyID is the key's id, 0 for the admin token. It namespaces idempotency
// keys.
func (p *Principal) KeyID() int64 {
	if p.key == nil {
		return 0
	}
	return p.key.ID
}

// IsAdmin reports whether p may do everything: the admin token, or a key
// with the admin scope.
func (p *Principal) IsAdmin() bool { return p.key == nil || p.key.has(ScopeAdmin) }

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal of ctx, or nil when there is none:
// every check then refuses.
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// Access is what a request does to what it names.
type Access int

// The accesses, by the scope they need.
const (
	Read Access = iota
	Write
)

func (a Access) scope() Scope {
	if a == Write {
		return ScopeWrite
	}
	return ScopeRead
}

// The checks below are the only place where a principal's rights are
// decided. Each returns nil or EPERMISSION with a message that says what
// the key lacks, never the key's secret or its other names.

// scope checks that p's key has a's scope.
func (p *Principal) scope(a Access) error {
	if p == nil {
		return counters.Errorf(counters.EPERMISSION, "The request carries no credentials.")
	}
	if p.IsAdmin() || p.key.has(a.scope()) {
		return nil
	}
	return counters.Errorf(counters.EPERMISSION, "This API key lacks the %q scope.", a.scope())
}

// Name checks that p may do a to the counter name.
func (p *Principal) Name(name string, a Access) error {
	if err := p.scope(a); err != nil {
		return err
	}
	if p.IsAdmin() || p.covers(name) {
		return nil
	}
	return counters.Errorf(counters.EPERMISSION, "This API key may not use the counter %q: it is outside the key's prefixes.", name)
}

// covers reports whether one of the key's prefixes takes in name (or every
// name that starts with it, when name is a prefix itself). "" takes in
// every name that is not reserved.
func (p *Principal) covers(name string) bool {
	for _, pre := range p.key.Prefixes {
		if pre == "" && !counters.IsReserved(name) || pre != "" && strings.HasPrefix(name, pre) {
			return true
		}
	}
	return false
}

// Prefix checks that p may do a to every counter whose name starts with
// prefix. The empty prefix is every counter, which only the admin may name,
// and a key with the "" prefix (whose listings then leave out the reserved
// names, see Service.Counters).
func (p *Principal) Prefix(prefix string, a Access) error {
	if err := p.scope(a); err != nil {
		return err
	}
	if p.IsAdmin() || prefix == "" && slices.Contains(p.key.Prefixes, "") || prefix != "" && p.covers(prefix) {
		return nil
	}
	if prefix == "" {
		return counters.Errorf(counters.EPERMISSION, "This API key must name a \"prefix\" inside its own prefixes.")
	}
	return counters.Errorf(counters.EPERMISSION, "This API key may not use the prefix %q: it is outside the key's prefixes.", prefix)
}

// listPrefix is the prefix a listing uses when it names prefix: a key
// with one prefix that names none lists its own.
func (p *Principal) listPrefix(prefix string) string {
	if prefix == "" && p != nil && !p.IsAdmin() && len(p.key.Prefixes) == 1 {
		return p.key.Prefixes[0]
	}
	return prefix
}

// All checks that p may act on every counter at once.
func (p *Principal) All() error {
	if p != nil && p.IsAdmin() {
		return nil
	}
	return counters.Errorf(counters.EPERMISSION, "Only an admin may act on all counters; name a \"prefix\" instead.")
}

// companies checks that p may do a to the boards and tickets of some
// company, before a board is looked up: a key without companies learns
// nothing of which boards exist.
func (p *Principal) companies(a Access) error {
	if err := p.scope(a); err != nil {
		return err
	}
	if p.IsAdmin() || len(p.key.Companies) > 0 {
		return nil
	}
	return counters.Errorf(counters.EPERMISSION, "This API key may not use boards and tickets: it has no companies.")
}

// Company checks that p may do a to the boards and tickets of company.
func (p *Principal) Company(company int64, a Access) error {
	if err := p.scope(a); err != nil {
		return err
	}
	if p.IsAdmin() || slices.Contains(p.key.Companies, company) {
		return nil
	}
	return counters.Errorf(counters.EPERMISSION, "This API key may not use the boards and tickets of company %d.", company)
}

// hook checks that p may manage the webhooks that watch target, a
// counter name or a prefix: it needs the write scope on them.
func (p *Principal) hook(target string, isPrefix bool) error {
	if isPrefix {
		return p.Prefix(target, Write)
	}
	return p.Name(target, Write)
}

// Keys checks that p may manage API keys.
func (p *Principal) Keys() error {
	if p != nil && p.IsAdmin() {
		return nil
	}
	return counters.Errorf(counters.EPERMISSION, "Only an admin may manage API keys.")
}
