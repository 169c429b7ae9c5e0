package app_test

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/geoip/geoiptest"
	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
)

// The User-Agents of the labelled hits' visitors.
const (
	agentChromeWindows = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36"
	agentSafariIPhone  = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
	agentFirefoxLinux  = "Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0"
	agentGooglebot     = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)

// geoNetworks are the test database's countries: documentation ranges.
var geoNetworks = map[string]string{
	"198.51.100.0/24": "DE",
	"203.0.113.0/24":  "AU",
	"2001:db8::/32":   "NZ",
}

// labelsEnv is the service trusting 127.0.0.1 as its proxy (so that
// X-Forwarded-For is each visitor's address), with a test country
// database of the given format; r may be nil (no Redis: no repeats).
func labelsEnv(t *testing.T, r *testenv.Redis, f geoiptest.Format) *apptest.Env {
	t.Helper()
	db := geoiptest.File(t, f, geoNetworks)
	return apptest.New(t, func(c *wire.Config) {
		if r != nil {
			c.Cache.RedisURL = r.URL()
		}
		c.HTTP.TrustedProxies = []string{"127.0.0.1"}
		c.Hits.GeoIPDB = db
		c.Log.Level = "debug" // the most the log could ever say of a hit
	})
}

// labelledHit is one page hit: the query of the hit (ref, utm_ and
// whatever else the page sent) and its headers.
type labelledHit struct {
	path    string // "" for the snippet's GET /v1/hits/{name}, "/badge.svg" for a badge
	query   string
	addr    string
	agent   string
	referer string
	origin  string
}

func (h labelledHit) send(t *testing.T, env *apptest.Env, name string) {
	t.Helper()
	headers := []string{"X-Forwarded-For: " + h.addr, "User-Agent: " + h.agent}
	if h.referer != "" {
		headers = append(headers, "Referer: "+h.referer)
	}
	if h.origin != "" {
		headers = append(headers, "Origin: "+h.origin)
	}
	target := "/v1/hits/" + url.PathEscape(name) + h.path
	if h.query != "" {
		target += "?" + h.query
	}
	if res := env.Do(t, "GET", target, "", headers...); res.Status != 200 {
		t.Fatalf("hit %s: status %d, %s", target, res.Status, res.Body)
	}
}

// breakdownRows is a breakdown as "value=count" in the answer's order,
// and checks that it adds up to its total.
func breakdownRows(t *testing.T, env *apptest.Env, path string) string {
	t.Helper()
	res := env.Do(t, "GET", path, "")
	if res.Status != 200 {
		t.Fatalf("%s: status %d, %s", path, res.Status, res.Body)
	}
	var b struct {
		Total int64
		Rows  []struct {
			Value string
			Count int64
		}
		More int64
	}
	res.Decode(t, &b)
	var out []string
	sum := b.More
	for _, r := range b.Rows {
		out = append(out, fmt.Sprintf("%s=%d", r.Value, r.Count))
		sum += r.Count
	}
	if sum != b.Total {
		t.Errorf("%s: rows and more add up to %d, total is %d", path, sum, b.Total)
	}
	return strings.Join(out, " ")
}

// Page hits from the snippet and from badges, with a test country
// database in each format, break down by referrer, country, browser,
// system, device and campaign exactly as their requests said; a page's
// breakdown and the site's (its prefix) agree, and so do the public and
// private reads.
func TestPageHitsBreakDownByWhereTheyCameFrom(t *testing.T) {
	t.Parallel()
	const site = "https://blog.example.org"
	hitsOf := []struct {
		page string
		hit  labelledHit
	}{
		// The snippet: ref is document.referrer, Origin the page's site.
		{"hits/site/a", labelledHit{query: "ref=" + url.QueryEscape("https://www.News.Example.com/item?id=1") + "&utm_source=newsletter&utm_medium=email&utm_campaign=launch",
			addr: "198.51.100.1", agent: agentChromeWindows, referer: site + "/a", origin: site}},
		{"hits/site/a", labelledHit{query: "ref=" + url.QueryEscape("https://news.example.com/") + "&utm_source=newsletter",
			addr: "198.51.100.2", agent: agentSafariIPhone, referer: site + "/a", origin: site}},
		{"hits/site/a", labelledHit{query: "ref=", addr: "203.0.113.3", agent: agentFirefoxLinux, referer: site + "/a", origin: site}},
		{"hits/site/b", labelledHit{query: "ref=" + url.QueryEscape(site+"/a"), addr: "2001:db8::4", agent: agentSafariIPhone, referer: site + "/b", origin: site}},
		{"hits/site/b", labelledHit{query: "ref=" + url.QueryEscape("https://search.example.net/?q=x"), addr: "192.0.2.5", agent: agentGooglebot, referer: site + "/b", origin: site}},
		// A badge in a README: no ref, its Referer is the page it is in.
		{"hits/site/b", labelledHit{path: "/badge.svg", addr: "198.51.100.6", agent: agentFirefoxLinux, referer: "https://github.com/acme/tool"}},
	}
	want := map[string]string{
		"referrer": "news.example.com=2 (direct)=1 (internal)=1 github.com=1 search.example.net=1",
		"country":  "DE=3 (unknown)=1 AU=1 NZ=1",
		"browser":  "Firefox=2 Safari=2 (unknown)=1 Chrome=1",
		"os":       "Linux=2 iOS=2 (unknown)=1 Windows=1",
		"device":   "desktop=3 mobile=2 bot=1",
		"source":   "(none)=4 newsletter=2",
		"medium":   "(none)=5 email=1",
		"campaign": "(none)=5 launch=1",
		"name":     "hits/site/a=3 hits/site/b=3",
	}
	for _, f := range []geoiptest.Format{geoiptest.MaxMind, geoiptest.LocationDB} {
		t.Run(f.String(), func(t *testing.T) {
			env := labelsEnv(t, nil, f)
			for _, h := range hitsOf {
				h.hit.send(t, env, h.page)
			}
			for _, by := range sortedKeys(want) {
				q := "by=" + by + "&limit=100"
				if got := breakdownRows(t, env, "/v1/hits/breakdown?prefix=hits/site/&"+q); got != want[by] {
					t.Errorf("by %s: %s, want %s", by, got, want[by])
				}
				if got, want := breakdownRows(t, env, "/v1/breakdown?prefix=hits/site/&"+q), breakdownRows(t, env, "/v1/hits/breakdown?prefix=hits/site/&"+q); got != want {
					t.Errorf("by %s: the private read says %s, the public one %s", by, got, want)
				}
			}
			if got, want := breakdownRows(t, env, "/v1/hits/hits%2Fsite%2Fa/breakdown?by=referrer"), "news.example.com=2 (direct)=1"; got != want {
				t.Errorf("page a by referrer: %s, want %s", got, want)
			}
			if got, want := breakdownRows(t, env, "/v1/counters/hits%2Fsite%2Fb/breakdown?by=device"), "bot=1 desktop=1 mobile=1"; got != want {
				t.Errorf("page b by device: %s, want %s", got, want)
			}
		})
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Nothing that identifies a visitor is kept when hits are labelled: after
// hits with distinctive addresses (IPv4 and IPv6), User-Agents, referrers
// with paths and queries, and other query values, no table of MySQL (every
// row, every column), no Redis key or value and no line of the service's
// log (at debug level) holds any of them; the labels made of them are
// there, so the search is not of an empty store.
func TestLabelledHitsLeaveNoTrace(t *testing.T) {
	t.Parallel()
	r := testenv.StartRedis(t)
	env := labelsEnv(t, r, geoiptest.MaxMind)
	const (
		ref     = "https://search.example.net/private/path-x91?q=secret-query-x91&uid=u-x91#frag-x91"
		referer = "https://blog.example.org/drafts/secret-draft-x91?token=tok-x91"
		agent   = agentChromeWindows + " Tracker-Unique-7f3a9"
		others  = "&session=sess-x91&email=someone%40mail-x91.example&utm_content=content-x91&utm_term=term-x91"
	)
	addrs := []string{"198.51.100.199", "203.0.113.188", "2001:db8:feed:beef::1234"}
	for i, addr := range addrs {
		labelledHit{
			query: "ref=" + url.QueryEscape(ref) + "&utm_source=src-kept&utm_campaign=camp-kept" + others,
			addr:  addr, agent: fmt.Sprintf("%s/%d", agent, i), referer: referer, origin: "https://blog.example.org",
		}.send(t, env, "hits/site/page")
		labelledHit{path: "/badge.svg", query: "label=views" + others, addr: addr, agent: agent, referer: referer}.
			send(t, env, "hits/site/badge")
	}
	if err := env.Visitors.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	dump := dumpMySQL(t, env.DB.DB) + readRedis(t, r) + env.Logs()
	for _, kept := range []string{"search.example.net", "blog.example.org", "src-kept", "camp-kept", "DE", "AU", "NZ"} {
		if !strings.Contains(dump, kept) {
			t.Errorf("the dump lacks the label value %q: the search below would find nothing", kept)
		}
	}
	// The agent's labels are counted too; storage writes the common
	// browsers and systems as codes of a fixed table until they settle, so
	// they are read back rather than searched for.
	for by, kept := range map[string]string{"browser": "Chrome=", "os": "Windows="} {
		if got := breakdownRows(t, env, "/v1/hits/hits%2Fsite%2Fpage/breakdown?by="+by); !strings.Contains(got, kept) {
			t.Errorf("the page's breakdown by %s is %s, without %s", by, got, kept)
		}
	}
	secrets := []string{
		"198.51.100", "203.0.113", "2001:db8", "feed:beef", "c633:64", // addresses, also as hex of 198.51.100
		"Tracker-Unique", "7f3a9", "Win64", "AppleWebKit", "KHTML", // the User-Agent
		"/private/", "path-x91", "secret-query", "u-x91", "frag-x91", "drafts", "secret-draft", "tok-x91", // referrers' paths and queries
		"sess-x91", "mail-x91", "content-x91", "term-x91", // other query values
	}
	for _, secret := range secrets {
		if i := strings.Index(dump, secret); i >= 0 {
			t.Errorf("the dump holds %q: ...%q...", secret, dump[max(0, i-60):min(len(dump), i+60)])
		}
	}
}

// readRedis is every key of Redis with its value read as its type is
// (strings, hashes, lists, sets, sorted sets, streams), as text: DUMP's
// serialisation may compress a value, and a search would miss it there.
func readRedis(t *testing.T, r *testenv.Redis) string {
	t.Helper()
	ctx := context.Background()
	rdb := r.DeadlineClient(t)
	keys, err := rdb.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, k := range keys {
		typ, err := rdb.Type(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		var v any
		switch typ {
		case "string":
			v, err = rdb.Get(ctx, k).Result()
		case "hash":
			v, err = rdb.HGetAll(ctx, k).Result()
		case "list":
			v, err = rdb.LRange(ctx, k, 0, -1).Result()
		case "set":
			v, err = rdb.SMembers(ctx, k).Result()
		case "zset":
			v, err = rdb.ZRangeWithScores(ctx, k, 0, -1).Result()
		case "stream":
			v, err = rdb.XRange(ctx, k, "-", "+").Result()
		case "none":
			continue // expired meanwhile
		default:
			t.Fatalf("key %q is a %s, which readRedis cannot read", k, typ)
		}
		if err != nil {
			t.Fatalf("key %q: %v", k, err)
		}
		fmt.Fprintf(&b, "%s\n%v\n", k, v)
	}
	return b.String()
}
