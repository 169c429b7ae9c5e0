package app_test

import (
	"encoding/json"
	"testing"

	"github.com/countersvc/countersvc/geoip/geoiptest"
	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/wire"
)

// GET /v1/me says what the credentials may read (the admin every name, a
// key its own prefixes), which prefixes are public, and whether a country
// database is loaded; without the token it is the one 401.
func TestMeSaysWhatTheCredentialsMayRead(t *testing.T) {
	t.Parallel()
	plain := apptest.New(t, func(c *wire.Config) { c.Keys.AdminToken = "s3cret" })
	geo := apptest.New(t, func(c *wire.Config) {
		c.Hits.PublicPrefixes = []string{"hits/", "views/"}
		c.Hits.GeoIPDB = geoiptest.File(t, geoiptest.LocationDB, map[string]string{"198.51.100.0/24": "DE"})
	})
	reader := createKey(t, plain, `{"name": "blog and shop", "scopes": ["read"], "prefixes": ["hits/blog/", "shop/"]}`, bearerOf("s3cret"))
	writer := createKey(t, plain, `{"name": "till", "scopes": ["write"], "prefixes": ["shop/"]}`, bearerOf("s3cret"))
	for _, tc := range []struct {
		name    string
		env     *apptest.Env
		headers []string
		status  int
		want    string
	}{
		{"admin token", plain, []string{bearerOf("s3cret")}, 200,
			`{"admin":true,"scopes":["read","write","admin"],"prefixes":[""],"public_prefixes":["hits/"],"country_database":null}`},
		{"read key", plain, []string{bearerOf(reader.Secret)}, 200,
			`{"admin":false,"scopes":["read"],"prefixes":["hits/blog/","shop/"],"public_prefixes":["hits/"],"country_database":null}`},
		{"loopback without a token set, countries loaded", geo, nil, 200,
			`{"admin":true,"scopes":["read","write","admin"],"prefixes":[""],"public_prefixes":["hits/","views/"],"country_database":"Test-Country"}`},
		{"no key", plain, nil, 401, ""},
		{"write-only key", plain, []string{bearerOf(writer.Secret)}, 403, ""},
	} {
		r := tc.env.Do(t, "GET", "/v1/me", "", tc.headers...)
		if r.Status != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, r.Status, r.Body, tc.status)
			continue
		}
		if tc.want == "" {
			continue
		}
		var got, want any
		r.Decode(t, &got)
		json.Unmarshal([]byte(tc.want), &want)
		if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
			t.Errorf("%s: %s, want %s", tc.name, g, w)
		}
		if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("%s: Cache-Control %q, want no-store", tc.name, cc)
		}
	}
}

func mustJSON(tb testing.TB, v any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}
