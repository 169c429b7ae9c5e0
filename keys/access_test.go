package keys

import (
	"testing"

	"github.com/countersvc/countersvc/counters"
)

// May is the one answer to "may this principal do this to this
// resource": each kind of principal against each kind of resource.
func TestMayAnswersEachPrincipalForEachResource(t *testing.T) {
	shop := &Principal{key: &Key{Scopes: []Scope{ScopeRead, ScopeWrite}, Prefixes: []string{"shop/"}, Companies: []int64{7}}}
	reader := &Principal{key: &Key{Scopes: []Scope{ScopeRead}, Prefixes: []string{"shop/"}, Companies: []int64{7}}}
	everything := &Principal{key: &Key{Scopes: []Scope{ScopeRead, ScopeWrite}, Prefixes: []string{""}}}
	adminKey := &Principal{key: &Key{Scopes: []Scope{ScopeAdmin}}}
	tests := []struct {
		name string
		p    *Principal
		a    Access
		r    Resource
		ok   bool
	}{
		{"the admin token writes a reserved name", Admin(), Write, Name("_tickets/board/1"), true},
		{"an admin key manages keys", adminKey, Write, APIKeys(), true},
		{"no principal is refused", nil, Read, Name("shop/a"), false},
		{"a key writes a name in its prefix", shop, Write, Name("shop/a"), true},
		{"a key may not write outside its prefixes", shop, Write, Name("other/a"), false},
		{"a read key may not write", reader, Write, Name("shop/a"), false},
		{"a read key reads its prefix", reader, Read, Prefix("shop/"), true},
		{"a key reads a narrower prefix", shop, Read, Prefix("shop/books/"), true},
		{"a key may not read a wider prefix", shop, Read, Prefix("sh"), false},
		{"a key may not read every counter", shop, Read, Prefix(""), false},
		{"the \"\" key reads every counter", everything, Read, Prefix(""), true},
		{"the \"\" key may not touch reserved names", everything, Write, Name("_tickets/board/1"), false},
		{"only the admin resets all", shop, Write, AllCounters(), false},
		{"the admin resets all", adminKey, Write, AllCounters(), true},
		{"a key uses its company", shop, Write, Company(7), true},
		{"a key may not use another company", shop, Write, Company(8), false},
		{"a key without companies uses none", everything, Read, SomeCompany(), false},
		{"a key with companies may look a board up", reader, Read, SomeCompany(), true},
		{"a key may not manage keys", shop, Write, APIKeys(), false},
		{"a write key starts an import", shop, Write, Anything(), true},
		{"a read key may not start one", reader, Write, Anything(), false},
		{"a hook on a prefix is the prefix", shop, Write, Target("shop/", true), true},
		{"a hook on a name outside is refused", shop, Write, Target("other/x", false), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.May(tt.a, tt.r)
			if got := err == nil; got != tt.ok {
				t.Fatalf("May = %v, want allowed %v", err, tt.ok)
			}
			if err != nil && counters.ErrorCode(err) != counters.EPERMISSION {
				t.Fatalf("refused with %v, want permission_denied", err)
			}
		})
	}
}
