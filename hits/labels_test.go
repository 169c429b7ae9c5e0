package hits_test

import (
	"maps"
	"net/netip"
	"strings"
	"testing"
	"unsafe"

	"github.com/countersvc/countersvc/hits"
)

// User-Agents of today's browsers, systems and devices, and of a crawler.
const (
	uaChromeWindows  = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
	uaEdgeWindows    = uaChromeWindows + " Edg/124.0.2478.51"
	uaSafariIPhone   = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
	uaSafariIPad     = "Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
	uaSafariMac      = "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15"
	uaFirefoxLinux   = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"
	uaChromeAndroid  = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36"
	uaGooglebot      = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
	uaHeadlessChrome = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/124.0.0.0 Safari/537.36"
)

// countries is a fixed IP-to-country table (geoip/ reads the real files).
type countries map[netip.Addr]string

func (c countries) Country(a netip.Addr) string { return c[a] }

var (
	addrDE = netip.MustParseAddr("198.51.100.7")
	addrNZ = netip.MustParseAddr("2001:db8::7")
	table  = countries{addrDE: "DE", addrNZ: "NZ", netip.MustParseAddr("198.51.100.8"): "zz?"}
)

// Each labeller rule, one case each: the labels a counted hit of the visit
// carries (only those named in want are compared).
func TestLabelsSayWhereAHitCameFrom(t *testing.T) {
	tests := []struct {
		name      string
		countries hits.Countries
		visit     hits.Visit
		want      map[string]string
	}{
		{
			name:  "the snippet's referrer is its host, lower case, without www. and port",
			visit: hits.Visit{RefSent: true, Ref: "https://WWW.News.Example.com:8443/a/b?q=secret#x", Origin: "https://blog.example.org"},
			want:  map[string]string{"referrer": "news.example.com"},
		},
		{
			name:  "the snippet with an empty document.referrer is a direct visit, whatever the Referer",
			visit: hits.Visit{RefSent: true, Ref: "", Referer: "https://blog.example.org/post", Origin: "https://blog.example.org"},
			want:  map[string]string{"referrer": "(direct)"},
		},
		{
			name:  "a referrer on the page's own site (its Origin) is internal",
			visit: hits.Visit{RefSent: true, Ref: "https://www.blog.example.org/index.html", Origin: "https://blog.example.org"},
			want:  map[string]string{"referrer": "(internal)"},
		},
		{
			name:  "without an Origin, the page is the Referer's host",
			visit: hits.Visit{RefSent: true, Ref: "https://blog.example.org/", Referer: "https://blog.example.org/post"},
			want:  map[string]string{"referrer": "(internal)"},
		},
		{
			name:  "without ref, a badge's referrer is the Referer: the page it is embedded in",
			visit: hits.Visit{Referer: "https://github.com/acme/tool/blob/main/README.md", Origin: "https://github.com"},
			want:  map[string]string{"referrer": "github.com"},
		},
		{
			name:  "without ref and Referer, a direct visit",
			visit: hits.Visit{},
			want:  map[string]string{"referrer": "(direct)"},
		},
		{
			name:  "a referrer that names no host is direct",
			visit: hits.Visit{RefSent: true, Ref: "/relative/path"},
			want:  map[string]string{"referrer": "(direct)"},
		},
		{
			name:  "an app's referrer is its host all the same",
			visit: hits.Visit{RefSent: true, Ref: "android-app://com.google.android.gm/"},
			want:  map[string]string{"referrer": "com.google.android.gm"},
		},
		{
			name:      "the country of the address",
			countries: table,
			visit:     hits.Visit{Addr: addrDE},
			want:      map[string]string{"country": "DE"},
		},
		{
			name:      "the country of an IPv6 address",
			countries: table,
			visit:     hits.Visit{Addr: addrNZ},
			want:      map[string]string{"country": "NZ"},
		},
		{
			name:      "an IPv4-mapped address is its IPv4 address",
			countries: table,
			visit:     hits.Visit{Addr: netip.AddrFrom16(addrDE.As16())},
			want:      map[string]string{"country": "DE"},
		},
		{
			name:      "an address the database does not know is unknown",
			countries: table,
			visit:     hits.Visit{Addr: netip.MustParseAddr("192.0.2.1")},
			want:      map[string]string{"country": "(unknown)"},
		},
		{
			name:      "a code that is no ISO 3166-1 alpha-2 code is unknown",
			countries: table,
			visit:     hits.Visit{Addr: netip.MustParseAddr("198.51.100.8")},
			want:      map[string]string{"country": "(unknown)"},
		},
		{
			name:  "without a database every country is unknown",
			visit: hits.Visit{Addr: addrDE},
			want:  map[string]string{"country": "(unknown)"},
		},
		{
			name:  "Chrome on Windows, a desktop",
			visit: hits.Visit{UserAgent: uaChromeWindows},
			want:  map[string]string{"browser": "Chrome", "os": "Windows", "device": "desktop"},
		},
		{
			name:  "Edge is not Chrome",
			visit: hits.Visit{UserAgent: uaEdgeWindows},
			want:  map[string]string{"browser": "Edge", "os": "Windows", "device": "desktop"},
		},
		{
			name:  "Safari on an iPhone, a mobile",
			visit: hits.Visit{UserAgent: uaSafariIPhone},
			want:  map[string]string{"browser": "Safari", "os": "iOS", "device": "mobile"},
		},
		{
			name:  "Safari on an iPad, a tablet",
			visit: hits.Visit{UserAgent: uaSafariIPad},
			want:  map[string]string{"browser": "Safari", "os": "iOS", "device": "tablet"},
		},
		{
			name:  "Safari on a Mac: macOS as Apple spells it",
			visit: hits.Visit{UserAgent: uaSafariMac},
			want:  map[string]string{"browser": "Safari", "os": "macOS", "device": "desktop"},
		},
		{
			name:  "Firefox on Linux",
			visit: hits.Visit{UserAgent: uaFirefoxLinux},
			want:  map[string]string{"browser": "Firefox", "os": "Linux", "device": "desktop"},
		},
		{
			name:  "Chrome on Android, a mobile",
			visit: hits.Visit{UserAgent: uaChromeAndroid},
			want:  map[string]string{"browser": "Chrome", "os": "Android", "device": "mobile"},
		},
		{
			name:  "a known crawler is a bot",
			visit: hits.Visit{UserAgent: uaGooglebot},
			want:  map[string]string{"device": "bot"},
		},
		{
			name:  "headless Chrome is a bot, as the visitor count says",
			visit: hits.Visit{UserAgent: uaHeadlessChrome},
			want:  map[string]string{"device": "bot"},
		},
		{
			name:  "no User-Agent: unknown families, and a bot",
			visit: hits.Visit{},
			want:  map[string]string{"browser": "(unknown)", "os": "(unknown)", "device": "bot"},
		},
		{
			name:  "the campaign's three values",
			visit: hits.Visit{Campaign: hits.Campaign{Source: "newsletter", Medium: "email", Campaign: "spring launch"}},
			want:  map[string]string{"source": "newsletter", "medium": "email", "campaign": "spring launch"},
		},
		{
			name:  "absent campaign values are no labels: a breakdown shows them as (none)",
			visit: hits.Visit{Campaign: hits.Campaign{Source: "mastodon"}},
			want:  map[string]string{"source": "mastodon", "medium": "", "campaign": ""},
		},
		{
			name:  "a value of spaces and control characters only is none",
			visit: hits.Visit{Campaign: hits.Campaign{Source: " \t\x00\n"}},
			want:  map[string]string{"source": ""},
		},
		{
			name:  "what is not printable UTF-8 is dropped from a value",
			visit: hits.Visit{Campaign: hits.Campaign{Source: "news\x00letter\xff"}},
			want:  map[string]string{"source": "newsletter"},
		},
		{
			name:  "a long value is cut at 128 bytes",
			visit: hits.Visit{Campaign: hits.Campaign{Campaign: strings.Repeat("a", 200)}},
			want:  map[string]string{"campaign": strings.Repeat("a", 128)},
		},
		{
			name:  "a long value is cut before the rune that crosses 128 bytes",
			visit: hits.Visit{Campaign: hits.Campaign{Campaign: "a" + strings.Repeat("é", 100)}},
			want:  map[string]string{"campaign": "a" + strings.Repeat("é", 63)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := hits.NewLabeller(tc.countries, nil).Labels(tc.visit)
			for _, k := range []string{"referrer", "country", "browser", "os", "device"} {
				if got[k] == "" {
					t.Errorf("no %s label: %v", k, got)
				}
			}
			for k, want := range tc.want {
				if v, ok := got[k]; want == "" && ok || v != want {
					t.Errorf("%s = %q, want %q (all: %v)", k, got[k], want, got)
				}
			}
		})
	}
}

// No label carries what identifies a visitor: the address, the User-Agent,
// the referrer's path or query, or a query value other than the campaign's.
func TestLabelsKeepNothingThatIdentifies(t *testing.T) {
	v := hits.Visit{
		Addr:      addrDE,
		UserAgent: uaFirefoxLinux + " Secret-Agent/7.7.7",
		RefSent:   true,
		Ref:       "https://search.example/results?q=my+private+search&uid=12345",
		Referer:   "https://blog.example.org/secret-draft?token=abc",
		Origin:    "https://blog.example.org",
		Campaign:  hits.Campaign{Source: "news"},
	}
	got := hits.NewLabeller(table, nil).Labels(v)
	for k, value := range got {
		for _, secret := range []string{"198.51.100", "Secret-Agent", "7.7.7", "private", "12345", "secret-draft", "token", "abc", "results"} {
			if strings.Contains(value, secret) {
				t.Errorf("%s = %q keeps %q", k, value, secret)
			}
		}
	}
	want := map[string]string{"referrer": "search.example", "country": "DE", "browser": "Firefox", "os": "Linux",
		"device": "desktop", "source": "news"}
	if !maps.Equal(got, want) {
		t.Errorf("labels %v, want %v", got, want)
	}
}

// What a page hit's labelling costs: one User-Agent parse (medama-io's
// trie), the crawler test (cached per User-Agent), one country lookup and
// the referrer's URL parse.
func BenchmarkLabels(b *testing.B) {
	l := hits.NewLabeller(table, nil)
	agents := []string{uaChromeWindows, uaSafariIPhone, uaFirefoxLinux, uaChromeAndroid, uaEdgeWindows, uaSafariMac}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l.Labels(hits.Visit{Addr: addrDE, UserAgent: agents[i%len(agents)], RefSent: true,
			Ref: "https://news.example.com/a", Origin: "https://blog.example.org", Campaign: hits.Campaign{Source: "x"}})
	}
}

// A service that labels hits sends each counted hit's labels with its
// increment; a HEAD and a repeat count nothing and so label nothing; a
// service without a labeller sends none.
func TestCountedHitsCarryTheirLabels(t *testing.T) {
	v := hits.Visit{Name: "hits/a", Addr: addrDE, UserAgent: uaFirefoxLinux, RefSent: true, Ref: "https://news.example.com/x"}
	for _, tc := range []struct {
		name    string
		labeler *hits.Labeller
		limits  *fakeLimits
		visit   hits.Visit
		want    []string // the referrer label of each labelled increment
	}{
		{"a counted hit is labelled", hits.NewLabeller(table, nil), nil, v, []string{"news.example.com"}},
		{"a HEAD is not counted, nor labelled", hits.NewLabeller(table, nil), nil, head(v), nil},
		{"a repeat is not counted, nor labelled", hits.NewLabeller(table, nil), &fakeLimits{earlier: hits.Created}, v, nil},
		{"without a labeller (breakdowns off) no labels are sent", nil, nil, v, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeCounters{values: map[string]int64{"hits/a": 1}}
			var limits hits.Limits
			if tc.limits != nil {
				limits = tc.limits
			}
			svc := hits.New(store, limits, hits.Options{Labels: tc.labeler})
			if _, err := svc.Count(t.Context(), tc.visit); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range store.labelled {
				got = append(got, l["referrer"])
				if l["country"] != "DE" || l["browser"] != "Firefox" {
					t.Errorf("labels %v", l)
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("labelled increments with referrers %q, want %q", got, tc.want)
			}
		})
	}
}

// The labels keep none of the visit's memory, which Fiber reuses once the
// request is answered: the first labels of a set, shared with the hits
// that follow, still say what they said after the visit's bytes change.
func TestLabelsKeepNoneOfTheVisitsMemory(t *testing.T) {
	l := hits.NewLabeller(table, nil)
	ref := []byte("https://news.example.com/a")
	ua := []byte(uaFirefoxLinux)
	source := []byte("letter")
	visit := hits.Visit{Addr: addrDE, UserAgent: unsafe.String(&ua[0], len(ua)), RefSent: true,
		Ref: unsafe.String(&ref[0], len(ref)), Campaign: hits.Campaign{Source: unsafe.String(&source[0], len(source))}}
	first := l.Labels(visit)
	want := maps.Clone(first)
	copy(ref, "https://xxxx.example.com/b")
	copy(ua, strings.Repeat("x", len(ua)))
	copy(source, "zzzzzz")
	if !maps.Equal(first, want) {
		t.Fatalf("the labels changed with the visit's memory: %v, were %v", first, want)
	}
	if want[hits.LabelReferrer] != "news.example.com" || want[hits.LabelSource] != "letter" {
		t.Fatalf("labels %v", want)
	}
	copy(ref, "https://news.example.com/a")
	copy(ua, uaFirefoxLinux)
	copy(source, "letter")
	if again := l.Labels(visit); !maps.Equal(again, want) {
		t.Fatalf("the same visit again: %v, want %v", again, want)
	}
}
