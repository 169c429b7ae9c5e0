package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/wire"
)

// Badges show the total, today's count or both ("today / total"), with
// today starting at midnight in tz; shields.json answers shields.io's
// endpoint schema with exactly its four keys.
func TestBadgesShowTodayAndTotalAndShieldsGetsItsSchema(t *testing.T) {
	t.Parallel()
	e := apptest.Shared(t)
	// The test's own prefix goes after hits/, which makes a name public.
	p := own()
	e.Do(t, "PUT", "/v1/counters/hits%2F"+p+"shop", `{"value": 3444}`) // a set: not counted today
	e.Do(t, "POST", "/v1/counters/hits%2F"+p+"shop/increment?by=12", "")
	tests := []struct {
		name, path string
		status     int
		want       string
	}{
		{"total by default", "/v1/counters/hits%2F" + p + "shop/badge.svg?format=comma", 200, ">3,456<"},
		{"today", "/v1/counters/hits%2F" + p + "shop/badge.svg?show=today&tz=Asia/Kolkata", 200, ">12<"},
		{"today and total", "/v1/counters/hits%2F" + p + "shop/badge.svg?show=today_total&format=comma", 200, ">12 / 3,456<"},
		{"the hit badge counts, then shows today", "/v1/hits/hits%2F" + p + "shop/badge.svg?show=today_total", 200, ">13 / 3457<"},
		{"shields", "/v1/counters/hits%2F" + p + "shop/shields.json?label=sales&color=blue&show=today_total&format=comma",
			200, `{"schemaVersion":1,"label":"sales","message":"13 / 3,457","color":"007ec6"}`},
		{"shields defaults", "/v1/counters/hits%2F" + p + "shop/shields.json", 200, `{"schemaVersion":1,"label":"hits","message":"3457","color":"44cc11"}`},
		{"unknown show", "/v1/counters/hits%2F" + p + "shop/badge.svg?show=week", 400, "show must be total, today, today_total or visitors"},
		{"unknown zone", "/v1/counters/hits%2F" + p + "shop/shields.json?show=today&tz=Nowhere", 400, "tz must be an IANA time zone"},
		{"missing counter", "/v1/counters/hits%2F" + p + "none/shields.json", 404, "not_found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.Do(t, "GET", tc.path, "")
			if r.Status != tc.status || !strings.Contains(string(r.Body), tc.want) {
				t.Fatalf("%d %s, want %d with %s", r.Status, r.Body, tc.status, tc.want)
			}
			if strings.HasSuffix(strings.Split(tc.path, "?")[0], ".json") && r.Status == 200 {
				var keys map[string]any
				if err := json.Unmarshal(r.Body, &keys); err != nil || len(keys) != 4 {
					t.Errorf("shields answer %s has keys %v, want exactly schemaVersion, label, message, color", r.Body, keys)
				}
			}
		})
	}
}

// Without COUNTERS_API_TOKEN a private name's badge is served as
// GET /v1/counters/{name} is: to loopback clients, and to nobody else.
func TestPrivateBadgesWithoutATokenAreServedToLoopbackOnly(t *testing.T) {
	t.Parallel()
	env := apptest.New(t)
	env.Do(t, "POST", "/v1/counters/shop%2Fsales/increment?by=7", "")
	far := remoteEnv(t, env)
	tokenNeeded := "Only names under the public prefixes can be read without a token"
	tests := []struct {
		name   string
		env    *apptest.Env
		path   string
		status int
		want   string
	}{
		{"loopback gets the badge", env, "/v1/counters/shop%2Fsales/badge.svg", 200, ">7<"},
		{"loopback gets shields.json", env, "/v1/counters/shop%2Fsales/shields.json", 200, `"message":"7"`},
		{"loopback, a missing counter", env, "/v1/counters/shop%2Fnone/shields.json", 404, "not_found"},
		{"another address is refused", far, "/v1/counters/shop%2Fsales/shields.json", 401, tokenNeeded},
		{"another address, the badge", far, "/v1/counters/shop%2Fsales/badge.svg", 401, tokenNeeded},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.env.Do(t, "GET", tc.path, "")
			if r.Status != tc.status || !strings.Contains(string(r.Body), tc.want) {
				t.Fatalf("%d %s, want %d with %s", r.Status, r.Body, tc.status, tc.want)
			}
		})
	}
}

// The read-only badges of a private counter are a read (openapi.yaml: badges
// have the read scope): the admin token and a read key within its prefixes
// get them, today's count included, through the same keys guard as GET
// /v1/counters/{name}; a key outside its prefixes is 403 and a bad key 401.
// Without credentials a private name is 401, a read that needs a token
// (openapi.yaml), whoever asks; the hit badge of one stays 403.
func TestPrivateBadgesAreReadWithAKeyWithinItsPrefixes(t *testing.T) {
	t.Parallel()
	env := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = "s3cret" })
	admin := bearerOf("s3cret")
	env.Do(t, "POST", "/v1/counters/shop%2Fsales/increment?by=7", "", admin)
	reader := createKey(t, env, `{"name": "shop reader", "scopes": ["read"], "prefixes": ["shop/"]}`, admin).Secret
	outside := createKey(t, env, `{"name": "other reader", "scopes": ["read"], "prefixes": ["other/"]}`, admin).Secret
	publicRefusal := "Only names under the public prefixes can be used without a token."
	tokenNeeded := "Only names under the public prefixes can be read without a token"
	tests := []struct {
		name, path string
		headers    []string
		status     int
		want       string
	}{
		{"the admin token gets the badge", "/v1/counters/shop%2Fsales/badge.svg?show=today_total", []string{admin}, 200, ">7 / 7<"},
		{"a read key gets the badge", "/v1/counters/shop%2Fsales/badge.svg?label=sales", []string{bearerOf(reader)}, 200, ">7<"},
		{"a read key gets shields.json", "/v1/counters/shop%2Fsales/shields.json?show=today", []string{bearerOf(reader)},
			200, `{"schemaVersion":1,"label":"hits","message":"7","color":"44cc11"}`},
		{"a read key's missing counter", "/v1/counters/shop%2Fnone/shields.json", []string{bearerOf(reader)}, 404, "not_found"},
		{"a key outside its prefixes", "/v1/counters/shop%2Fsales/shields.json", []string{bearerOf(outside)}, 403, "outside the key's prefixes"},
		{"a key outside its prefixes, as an image", "/v1/counters/shop%2Fsales/badge.svg", []string{bearerOf(outside), "Accept: image/*"}, 403, "forbidden"},
		{"an unknown key", "/v1/counters/shop%2Fsales/badge.svg", []string{bearerOf(unknownSecret())}, 401, "unauthenticated"},
		{"anonymous on a private name", "/v1/counters/shop%2Fsales/shields.json", nil, 401, tokenNeeded},
		{"anonymous on a private badge", "/v1/counters/shop%2Fsales/badge.svg", nil, 401, tokenNeeded},
		{"anonymous on a private badge, as an image", "/v1/counters/shop%2Fsales/badge.svg", []string{"Accept: image/*"}, 401, "unauthenticated"},
		{"the hit badge stays public only", "/v1/hits/shop%2Fsales/badge.svg", []string{admin}, 403, publicRefusal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := env.Do(t, "GET", tc.path, "", tc.headers...)
			if r.Status != tc.status || !strings.Contains(string(r.Body), tc.want) {
				t.Fatalf("%d %s, want %d with %s", r.Status, r.Body, tc.status, tc.want)
			}
		})
	}
	if r := env.Do(t, "GET", "/v1/counters/shop%2Fsales", "", admin); !strings.Contains(string(r.Body), `"value":7`) {
		t.Errorf("a badge changed the counter: %s", r.Body)
	}
}
