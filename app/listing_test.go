package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
)

// A listing that hides the reserved names (a key with the "" prefix) leaves
// them out of its query, wherever they sort ("_" comes after the capitals
// and before the small letters): every page is full while visible names
// follow, next_after is null exactly when none follows and never names a
// hidden counter, and the export streams the same names. The admin's
// listing of the same prefix still shows them, and the cache never serves
// a page of one to the other.
func TestListingThatHidesReservedNamesFillsEveryPageAndNeverPointsAtOne(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		visible []string // the names the key sees, in byte order
		limit   int
	}{
		{"reserved names before every visible one", []string{"a/1", "a/2", "b/1"}, 2},
		{"reserved names between the visible ones", []string{"A/1", "a/1", "a/2"}, 1},
		{"reserved names after every visible one", []string{"A/1", "B/1", "C/1", "D/1"}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := apptest.NewWithCache(t, testenv.StartRedis(t).URL())
			for _, name := range tc.visible {
				if r := env.Do(t, "PUT", "/v1/counters/"+url.PathEscape(name), `{"value": 1}`); r.Status != 201 {
					t.Fatalf("PUT %s: %d %s", name, r.Status, r.Body)
				}
			}
			all := slices.Clone(tc.visible)
			for i := range 3 { // more reserved names than a page holds
				b := createBoard(t, env, 7, fmt.Sprintf("R%d", i))
				createTicket(t, env, b.ID, "t")
				all = append(all, fmt.Sprintf("_tickets/board/%d", b.ID))
			}
			slices.Sort(all)
			every := bearerOf(createKey(t, env, `{"name": "every", "scopes": ["read"], "prefixes": [""]}`).Secret)

			// The admin's listing first, so that a cache keyed alike
			// would serve its pages to the key.
			listings := []struct {
				name, query, auth string
				want              []string
			}{
				{"the admin's listing shows them", "", "", all},
				{"the \"\" prefix, named by none", "", every, tc.visible},
				{"the \"\" prefix, named empty", "prefix=&", every, tc.visible},
			}
			for _, l := range listings {
				if got := listedPages(t, env, l.query, tc.limit, l.auth); !reflect.DeepEqual(got, l.want) {
					t.Errorf("%s: listed %q, want %q", l.name, got, l.want)
				}
				if got := exportedNames(t, env, l.query, l.auth); !reflect.DeepEqual(got, l.want) {
					t.Errorf("%s: exported %q, want %q", l.name, got, l.want)
				}
			}
		})
	}
}

// listedPages follows next_after from the first page of GET
// /v1/counters?<query>limit=<limit> to the last and returns the names
// listed. It fails the test unless every page but the last is full and
// next_after is the last name of its page.
func listedPages(t *testing.T, env *apptest.Env, query string, limit int, auth string) []string {
	t.Helper()
	var headers []string
	if auth != "" {
		headers = []string{auth}
	}
	var names []string
	after := ""
	for n := 1; ; n++ {
		path := fmt.Sprintf("/v1/counters?%slimit=%d&after=%s", query, limit, url.QueryEscape(after))
		r := env.Do(t, "GET", path, "", headers...)
		if r.Status != 200 {
			t.Fatalf("GET %s: %d %s", path, r.Status, r.Body)
		}
		var page struct {
			Counters  []struct{ Name string }
			NextAfter *string `json:"next_after"`
		}
		r.Decode(t, &page)
		for _, c := range page.Counters {
			names = append(names, c.Name)
		}
		if page.NextAfter == nil {
			return names
		}
		if len(page.Counters) != limit || *page.NextAfter != page.Counters[len(page.Counters)-1].Name {
			t.Fatalf("GET %s (page %d): %s; want %d counters while names follow, and next_after the last of them", path, n, r.Body, limit)
		}
		if n > 100 {
			t.Fatalf("GET %s: still a next_after after %d pages", path, n)
		}
		after = *page.NextAfter
	}
}

// exportedNames is the names GET /v1/export?<query> streams.
func exportedNames(t *testing.T, env *apptest.Env, query, auth string) []string {
	t.Helper()
	var headers []string
	if auth != "" {
		headers = []string{auth}
	}
	r := env.Do(t, "GET", "/v1/export?"+query, "", headers...)
	if r.Status != 200 {
		t.Fatalf("GET /v1/export?%s: %d %s", query, r.Status, r.Body)
	}
	var names []string
	sc := bufio.NewScanner(bytes.NewReader(r.Body))
	for sc.Scan() {
		var c struct {
			Name  string
			Error any
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil || c.Error != nil {
			t.Fatalf("GET /v1/export?%s: line %q (%v)", query, sc.Text(), err)
		}
		names = append(names, c.Name)
	}
	return names
}
