package keys

import (
	"context"
	"testing"
)

type otherKey struct{}

// A request's context carries its principal whatever its parent: the
// background one, which NewContext answers without allocating, or one
// that carries more, which it keeps.
func TestNewContextCarriesThePrincipalOnEveryParent(t *testing.T) {
	key := newPrincipal(&Key{ID: 7, Scopes: []Scope{ScopeRead}}, [32]byte{1})
	bare := &Principal{key: &Key{ID: 8}} // built without newPrincipal, as tests do
	valued := context.WithValue(context.Background(), otherKey{}, "kept")
	tests := []struct {
		name   string
		parent context.Context
		p      *Principal
	}{
		{"admin on the background", context.Background(), admin},
		{"a key on the background", context.Background(), key},
		{"a principal without its context on the background", context.Background(), bare},
		{"admin on a context with a value", valued, admin},
		{"a key on a context with a value", valued, key},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := NewContext(tt.parent, tt.p)
			if got := FromContext(ctx); got != tt.p {
				t.Fatalf("FromContext = %p, want %p", got, tt.p)
			}
			if want := tt.parent.Value(otherKey{}); ctx.Value(otherKey{}) != want {
				t.Errorf("the parent's value: got %v, want %v", ctx.Value(otherKey{}), want)
			}
		})
	}
	if FromContext(context.Background()) != nil {
		t.Error("the background context carries a principal")
	}
}

func TestNewContextOnTheBackgroundAllocatesNothing(t *testing.T) {
	key := newPrincipal(&Key{ID: 7}, [32]byte{1})
	if n := testing.AllocsPerRun(100, func() { _ = NewContext(context.Background(), key) }); n != 0 {
		t.Errorf("NewContext allocated %v times a call, want 0", n)
	}
}
