package app_test

import (
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
)

// What browsers send for an <img>, and what GitHub's image proxy sends.
const (
	chromeImgAccept = "Accept: image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8"
	camoAccept      = "Accept: image/*"
)

// An <img> shows a broken image for a JSON error, so a badge requested by
// an image client draws its error, with the error's status; API clients
// keep the JSON error.
func TestBadgeErrorsAreDrawnForImageClients(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	env := apptest.New(t, hitLimits(r, 2, 0))
	tests := []struct {
		name   string
		path   string
		accept string
		status int
		shows  string // "" for a JSON error
	}{
		{"missing counter", "/v1/counters/hits%2Fnone/badge.svg", chromeImgAccept, 404, "not found"},
		{"missing counter, through the proxy", "/v1/counters/hits%2Fnone/badge.svg", camoAccept, 404, "not found"},
		{"bad option", "/v1/hits/hits%2Fa/badge.svg?format=roman", chromeImgAccept, 400, "invalid"},
		{"bad label", "/v1/hits/hits%2Fa/badge.svg?label=a%01b", chromeImgAccept, 400, "invalid"},
		{"private name", "/v1/hits/books%2Fa/badge.svg", chromeImgAccept, 403, "forbidden"},
		{"API client", "/v1/counters/hits%2Fnone/badge.svg", "Accept: */*", 404, ""},
		{"hit 1", "/v1/hits/hits%2Fa/badge.svg", chromeImgAccept, 200, "1"},
		{"hit 2", "/v1/hits/hits%2Fa/badge.svg?label=views", chromeImgAccept, 200, "2"},
		{"rate limited", "/v1/hits/hits%2Fa/badge.svg?label=views", chromeImgAccept, 429, "rate limited"},
	}
	for _, tc := range tests {
		res := env.Do(t, "GET", tc.path, "", tc.accept)
		if res.Status != tc.status {
			t.Errorf("%s: status %d, want %d; body %s", tc.name, res.Status, tc.status, res.Body)
			continue
		}
		if tc.shows == "" {
			if ct := res.Header.Get("Content-Type"); ct != "application/json" || res.ErrorCode() == "" {
				t.Errorf("%s: Content-Type %q, body %s; want a JSON error", tc.name, ct, res.Body)
			}
			continue
		}
		if ct := res.Header.Get("Content-Type"); ct != "image/svg+xml; charset=utf-8" {
			t.Errorf("%s: Content-Type %q, want an SVG", tc.name, ct)
		}
		if b := parseBadge(t, res.Body); !b.shows(tc.shows) {
			t.Errorf("%s: badge %q, want it to show %q", tc.name, b.texts, tc.shows)
		}
		if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
			t.Errorf("%s: Access-Control-Allow-Origin %q", tc.name, got)
		}
	}
	res := env.Do(t, "GET", "/v1/hits/hits%2Fa/badge.svg", "", chromeImgAccept)
	if secs := res.Header.Get("Retry-After"); res.Status != 429 || secs == "" {
		t.Errorf("rate limited badge: status %d, Retry-After %q", res.Status, secs)
	}
	if b := parseBadge(t, res.Body); !b.shows("hits") {
		t.Errorf("rate limited badge without a label: %q, want the default label", b.texts)
	}
}

// The badge takes shields' style and labelColor, as shields spells them.
func TestBadgeTakesShieldsStyleAndLabelColor(t *testing.T) {
	t.Parallel()
	env := apptest.Shared(t)
	p := own()
	env.Do(t, "PUT", "/v1/counters/hits%2F"+p+"s", `{"value": 1234}`)
	tests := []struct {
		query  string
		status int
		has    string
	}{
		{"style=flat-square", 200, `height="20"`},
		{"style=plastic", 200, `height="18"`},
		{"style=for-the-badge", 200, `>HITS<`},
		{"labelColor=blue", 200, `fill="#007ec6"`},
		{"label_color=orange", 200, `fill="#fe7d37"`},
		{"style=3d", 400, ""},
		{"labelColor=nocolour", 400, ""},
		{"color=purple", 200, `fill="#800080"`},
		{"color=rgba(0%2C126%2C198%2C.5)", 200, `fill="rgba(0,126,198,0.5)"`},
		{"labelColor=hsl(0%2C100%25%2C50%25)", 200, `fill="#ff0000"`},
		{"color=rgb(1%2C2%2C3)%22%2F%3E%3Cscript%3E", 400, ""},
	}
	for _, tc := range tests {
		res := env.Do(t, "GET", "/v1/counters/hits%2F"+p+"s/badge.svg?"+tc.query, "")
		if res.Status != tc.status {
			t.Errorf("%s: status %d, want %d; body %s", tc.query, res.Status, tc.status, res.Body)
			continue
		}
		if tc.has != "" && !strings.Contains(string(res.Body), tc.has) {
			t.Errorf("%s: badge lacks %s: %s", tc.query, tc.has, res.Body)
		}
	}
}
