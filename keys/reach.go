package keys

import "slices"

// Scopes are what p may do: every scope for the admin token.
func (p *Principal) Scopes() []Scope {
	if p == nil {
		return nil
	}
	if p.key == nil {
		return []Scope{ScopeRead, ScopeWrite, ScopeAdmin}
	}
	return slices.Clone(p.key.Scopes)
}

// Prefixes are the names p may touch, by prefix: "" (every name) for the
// admin token and for a key with the admin scope, which no prefix limits.
func (p *Principal) Prefixes() []string {
	if p == nil {
		return nil
	}
	if p.IsAdmin() {
		return []string{""}
	}
	return slices.Clone(p.key.Prefixes)
}
