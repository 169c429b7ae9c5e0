package wire

import (
	"slices"
	"strings"
	"testing"
)

// The capabilities are built in an order that gives each what it needs;
// an order that builds one before what it needs is refused by name, as is
// a list without what the HTTP application needs.
func TestCapabilitiesAreBuiltAfterWhatTheyNeed(t *testing.T) {
	if err := checkOrder(capabilities); err != nil {
		t.Fatalf("the service's own order: %v", err)
	}
	byName := func(name string) capability {
		i := slices.IndexFunc(capabilities, func(c capability) bool { return c.name == name })
		if i < 0 {
			t.Fatalf("no capability %q", name)
		}
		return capabilities[i]
	}
	visitors, history, hits := byName("unique visitors"), byName("history"), byName("page hits")
	tests := []struct {
		name  string
		order []capability
		want  string // in the error
	}{
		{"page hits before the visitors", []capability{history, hits, visitors}, `"history" needs the visitor count`},
		{"history before the visitors", []capability{history, visitors, hits}, `"history" needs the visitor count`},
		{"page hits before their keys", []capability{byName("tickets"), hits, visitors, history}, `"page hits" needs the client keys`},
		{"no page hits", []capability{visitors, history}, "needs the page hits"},
		{"no history", []capability{visitors, hits}, `"page hits" needs the history`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOrder(tt.order)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("checkOrder: %v, want an error with %q", err, tt.want)
			}
		})
	}
}
