package visitors_test

import (
	"context"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/visitors"
)

// A visitor's identifier on a page is derived from the visitor's by Of,
// exactly as ID of the identifier's bytes and the page: processes of
// either way tell the same visitor by the same identifier.
func TestOfIsTheIDOfAnIdentifierAndAPart(t *testing.T) {
	day, err := visitors.NewKeys(fixedSalts(strings.Repeat("s", visitors.SaltSize)), nil).Today(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"hits/a", "", strings.Repeat("hits/long/", 200)} {
		id := day.ID("198.51.100.1", "Mozilla/5.0")
		for range 2 { // the second from the pool
			if got, want := day.Of(id, part), day.ID(string(id[:]), part); got != want {
				t.Errorf("Of(id, %.20q) = %x, want ID(id, part) %x", part, got, want)
			}
		}
	}
}
