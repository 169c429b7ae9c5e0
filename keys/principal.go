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
	key  *Key     // nil: the admin
	hash [32]byte // the key's secret's, for Service.Watch
	// background is context.Background() carrying the principal, which
	// NewContext hands out instead of a new context per request when
	// the request's own context is that (Fiber's, unless set).
	background context.Context
}

// newPrincipal is the principal of k (nil: the admin).
func newPrincipal(k *Key, hash [32]byte) *Principal {
	p := &Principal{key: k, hash: hash}
	p.background = context.WithValue(context.Background(), principalKey{}, p)
	return p
}

// admin is the principal of the API token.
var admin = newPrincipal(nil, [32]byte{})

// Admin returns the principal that may do everything.
func Admin() *Principal { return admin }

// KeyID is the key's id, 0 for the admin token. It namespaces idempotency
// keys.
func (p *Principal) KeyID() int64 {
	if p == nil || p.key == nil {
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
	if p != nil && p.background != nil && ctx == context.Background() {
		return p.background // the same context every time: nothing allocated
	}
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

// Resource is what a request touches: a counter name, a prefix, a
// company's boards, every counter, the API keys, or nothing named (only a
// scope is needed). keys knows no domain's types: the HTTP layer says,
// route by route, which resource a request names (app/access.go).
type Resource struct {
	kind    resourceKind
	name    string // the counter name or prefix
	company int64
}

type resourceKind int

const (
	kindScope resourceKind = iota
	kindName
	kindPrefix
	kindCompany
	kindAnyCompany
	kindAllCounters
	kindKeys
)

// Name is one counter.
func Name(name string) Resource { return Resource{kind: kindName, name: name} }

// Prefix is every counter whose name starts with prefix. The empty prefix
// is every counter, which only the admin may name, and a key with the ""
// prefix (whose listings then leave out the reserved names, see
// HidesReserved).
func Prefix(prefix string) Resource { return Resource{kind: kindPrefix, name: prefix} }

// Target is a counter name, or a prefix when isPrefix: what a webhook watches.
func Target(target string, isPrefix bool) Resource {
	if isPrefix {
		return Prefix(target)
	}
	return Name(target)
}

// Company is the boards and tickets of one company.
func Company(id int64) Resource { return Resource{kind: kindCompany, company: id} }

// SomeCompany is the boards and tickets of a company not yet known: it is
// checked before a board is looked up, so that a key without companies
// learns nothing of which boards exist.
func SomeCompany() Resource { return Resource{kind: kindAnyCompany} }

// AllCounters is every counter at once (a reset of all).
func AllCounters() Resource { return Resource{kind: kindAllCounters} }

// APIKeys is the API keys themselves.
func APIKeys() Resource { return Resource{kind: kindKeys} }

// Anything names nothing: only the access's scope is checked (the start
// of an import, whose lines are checked one by one as they come).
func Anything() Resource { return Resource{kind: kindScope} }

// May checks that p may do a to r.
func (p *Principal) May(a Access, r Resource) error {
	switch r.kind {
	case kindName:
		return p.name(r.name, a)
	case kindPrefix:
		return p.prefix(r.name, a)
	case kindCompany:
		return p.company(r.company, a)
	case kindAnyCompany:
		return p.companies(a)
	case kindAllCounters:
		return p.all()
	case kindKeys:
		return p.keys()
	}
	return p.scope(a)
}

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

// name checks that p may do a to the counter name.
func (p *Principal) name(name string, a Access) error {
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

// prefix checks that p may do a to every counter whose name starts with
// prefix.
func (p *Principal) prefix(prefix string, a Access) error {
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

// ListPrefix is the prefix a listing uses when it names prefix: a key
// with one prefix that names none lists its own.
func (p *Principal) ListPrefix(prefix string) string {
	if prefix == "" && p != nil && !p.IsAdmin() && len(p.key.Prefixes) == 1 {
		return p.key.Prefixes[0]
	}
	return prefix
}

// HidesReserved reports whether a listing of prefix must leave out the
// reserved names for p: a key that lists everything through the ""
// prefix never sees them.
func (p *Principal) HidesReserved(prefix string) bool {
	return prefix == "" && (p == nil || !p.IsAdmin())
}

// all checks that p may act on every counter at once.
func (p *Principal) all() error {
	if p != nil && p.IsAdmin() {
		return nil
	}
	return counters.Errorf(counters.EPERMISSION, "Only an admin may act on all counters; name a \"prefix\" instead.")
}

// companies checks that p may do a to the boards and tickets of some
// company.
func (p *Principal) companies(a Access) error {
	if err := p.scope(a); err != nil {
		return err
	}
	if p.IsAdmin() || len(p.key.Companies) > 0 {
		return nil
	}
	return counters.Errorf(counters.EPERMISSION, "This API key may not use boards and tickets: it has no companies.")
}

// company checks that p may do a to the boards and tickets of company.
func (p *Principal) company(company int64, a Access) error {
	if err := p.scope(a); err != nil {
		return err
	}
	if p.IsAdmin() || slices.Contains(p.key.Companies, company) {
		return nil
	}
	return counters.Errorf(counters.EPERMISSION, "This API key may not use the boards and tickets of company %d.", company)
}

// keys checks that p may manage API keys.
func (p *Principal) keys() error {
	if p != nil && p.IsAdmin() {
		return nil
	}
	return counters.Errorf(counters.EPERMISSION, "Only an admin may manage API keys.")
}
