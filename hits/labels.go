package hits

import (
	"hash/maphash"
	"net/netip"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	useragent "github.com/medama-io/go-useragent"
	"github.com/medama-io/go-useragent/agents"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/foundation/memo"
	"github.com/countersvc/countersvc/visitors"
)

// The labels every counted page hit carries (docs/breakdowns.md, and openapi.yaml on the hit endpoints), and the
// values that stand for "nothing known".
const (
	LabelReferrer = "referrer"
	LabelCountry  = "country"
	LabelBrowser  = "browser"
	LabelOS       = "os"
	LabelDevice   = "device"
	LabelSource   = "source"
	LabelMedium   = "medium"
	LabelCampaign = "campaign"

	Direct   = "(direct)"   // a referrer: none, or none that names a host
	Internal = "(internal)" // a referrer: the page's own site
	Unknown  = "(unknown)"  // a country, browser, system or device nobody knows
	NoValue  = "(none)"     // what a breakdown shows for a step without the label: a campaign value the URL did not have

	// MaxLabelValue is the most bytes a label value may have: longer
	// campaign values are cut there, on a rune boundary.
	MaxLabelValue = 128
)

// Campaign is what the page's URL said of the campaign that brought the
// visitor: its utm_source, utm_medium and utm_campaign, "" when absent.
type Campaign struct {
	Source, Medium, Campaign string
}

// Countries tell the country of an address: an ISO 3166-1 alpha-2 code,
// or "" when they do not know it (see geoip/).
type Countries interface {
	Country(netip.Addr) string
}

// Labeller labels page hits with where they came from: the referrer's
// host, the country, the browser, system and device families, and the
// campaign. It keeps nothing of what it is given: each label is a host, a
// family or a country code, or one of the three campaign values cut to
// MaxLabelValue, never an address, a User-Agent, a path or another query
// value. It is safe for concurrent use.
//
// User-Agents are parsed with medama-io/go-useragent, a trie built from
// maintained browser and system tokens: about 0.4 µs a parse on this
// machine (BenchmarkLabels), a tenth of mileusna/useragent's and a
// thirtieth of uap-go's regular expressions. Crawlers are told by
// visitors.Bots, the same test that keeps them out of the visitor count,
// so that device=bot counts exactly the hits that are not visits for that
// reason.
//
// A site's hits carry few distinct agents and few distinct sets of
// labels, and every hit's labels travel with it to its round: so the
// labeller keeps what it found per agent (by the agent's hash, as Bots
// does) and hands out one map per distinct set of labels, shared and
// never written, rather than a map a hit for the garbage collector, with
// the increment's form of it (breakdowns.Of) made once too. A page's
// visitors also come from few referrers: the host of each referring URL
// is kept as well, by the URL's hash, so that a hit parses none it has
// seen. All are memo.Maps of labelsKept entries.
type Labeller struct {
	countries Countries // nil: every country is Unknown
	bots      *visitors.Bots
	agents    *useragent.Parser
	seed      maphash.Seed
	agent     *memo.Map[uint64, agentLabels]
	hosts     *memo.Map[uint64, string] // hostOf, by the URL's hash
	shared    *memo.Map[labelSet, labelled]
}

// labelled are a set of labels, and the same as an increment's Extra.
type labelled struct {
	labels breakdowns.Labels
	extra  counters.Extra
}

// deviceBot is the device of the agents of the labeller's bots, and of no
// other agent.
const deviceBot = "bot"

// labelsKept bounds the labeller's memories: the agents and the sets of
// labels it keeps, each.
const labelsKept = 4096

// agentLabels are the labels a User-Agent gives.
type agentLabels struct{ browser, os, device string }

// labelSet is a hit's labels by key, "" for one it does not carry: the
// key of their shared map.
type labelSet struct {
	referrer, country string
	agentLabels
	source, medium, campaign string
}

// NewLabeller returns a labeller that finds countries in countries (nil:
// none is known) and crawlers with bots (nil: visitors.NewBots()).
func NewLabeller(countries Countries, bots *visitors.Bots) *Labeller {
	if bots == nil {
		bots = visitors.NewBots()
	}
	return &Labeller{countries: countries, bots: bots, agents: useragent.NewParser(), seed: maphash.MakeSeed(),
		agent: memo.New[uint64, agentLabels](labelsKept), hosts: memo.New[uint64, string](labelsKept),
		shared: memo.New[labelSet, labelled](labelsKept)}
}

// Labels returns the labels of a counted hit of v: always referrer,
// country, browser, os and device, and those of source, medium and
// campaign that the page's URL had (a breakdown shows the others as
// NoValue). They are the
// labeller's own memory: v's strings may be reused once it returns (Fiber's
// are), and a labelled increment may be queued past that. The map is
// shared with the other hits of the same labels: nobody may write it.
func (l *Labeller) Labels(v Visit) breakdowns.Labels {
	labels, _ := l.labels(v)
	return labels.labels
}

// labels are Labels(v) with their Extra, and whether v's agent is one of
// l's bots.
func (l *Labeller) labels(v Visit) (labelled, bool) {
	set := labelSet{
		referrer:    referrer(v, l.hostOf),
		country:     l.country(v.Addr),
		agentLabels: l.agentOf(v.UserAgent),
		source:      campaignValue(v.Campaign.Source),
		medium:      campaignValue(v.Campaign.Medium),
		campaign:    campaignValue(v.Campaign.Campaign),
	}
	bot := set.device == deviceBot
	if kept, ok := l.shared.Get(set); ok {
		return kept, bot
	}
	// The set's strings may be v's memory: the kept ones are copies.
	set.referrer = strings.Clone(set.referrer)
	set.source, set.medium, set.campaign = strings.Clone(set.source), strings.Clone(set.medium), strings.Clone(set.campaign)
	labels := breakdowns.Labels{LabelReferrer: set.referrer, LabelCountry: set.country,
		LabelBrowser: set.browser, LabelOS: set.os, LabelDevice: set.device}
	campaign(labels, LabelSource, set.source)
	campaign(labels, LabelMedium, set.medium)
	campaign(labels, LabelCampaign, set.campaign)
	kept := labelled{labels: labels, extra: breakdowns.Of(labels)}
	l.shared.Put(set, kept)
	return kept, bot
}

// campaign sets the label key to the campaign value s, unless there is
// none: a step without a label is what a breakdown shows as NoValue, so
// storing NoValue itself would only cost a row per hit.
func campaign(labels breakdowns.Labels, key, s string) {
	if s != NoValue {
		labels[key] = s
	}
}

// Referrer is the host the visit came from (lower case, without "www."
// and port): the page's document.referrer when the snippet sent it
// (RefSent), else the Referer of the request (a badge in a page). Direct
// when there is none; Internal when the snippet's referrer is the host of
// the page that counted the hit (the request's Origin, else its Referer).
func Referrer(v Visit) string { return referrer(v, hostOf) }

// referrer is Referrer, with the hosts of URLs told by host.
func referrer(v Visit, hostOf func(string) string) string {
	from := v.Referer
	if v.RefSent {
		from = v.Ref
	}
	host := hostOf(from)
	if host == "" {
		return Direct
	}
	if v.RefSent {
		page := hostOf(v.Origin)
		if page == "" {
			page = hostOf(v.Referer)
		}
		if host == page {
			return Internal
		}
	}
	return host
}

// hostOf is the package's hostOf, remembered by the URL's hash: the host
// it keeps is its own copy, as raw may be the request's memory.
func (l *Labeller) hostOf(raw string) string {
	if raw == "" {
		return ""
	}
	h := maphash.String(l.seed, raw)
	if host, ok := l.hosts.Get(h); ok {
		return host
	}
	host := strings.Clone(hostOf(raw))
	l.hosts.Put(h, host)
	return host
}

// hostOf is the host of an absolute URL, lower case, without "www." and
// port, or "" when raw names none (empty, relative, "null", malformed) or
// one that is no printable label value.
func hostOf(raw string) string {
	if raw == "" || raw == "null" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	host = strings.TrimPrefix(host, "www.")
	if host == "" || len(host) > MaxLabelValue || !printable(host) {
		return ""
	}
	return host
}

func (l *Labeller) country(a netip.Addr) string {
	if l.countries == nil || !a.IsValid() {
		return Unknown
	}
	code := l.countries.Country(a.Unmap())
	if len(code) != 2 || !isUpperASCII(code[0]) || !isUpperASCII(code[1]) {
		return Unknown
	}
	return code
}

func isUpperASCII(b byte) bool { return 'A' <= b && b <= 'Z' }

// agentOf is the browser, os and device labels of userAgent.
func (l *Labeller) agentOf(userAgent string) agentLabels {
	h := maphash.String(l.seed, userAgent)
	if a, ok := l.agent.Get(h); ok {
		return a
	}
	ua := l.agents.Parse(userAgent)
	device := ""
	switch {
	case l.bots.Is(userAgent):
		device = deviceBot
	case ua.Device() == agents.DeviceBot:
		// A crawler the parser knows and crawlerdetect does not: it is
		// counted as a visitor, so it is not labelled one of the bots.
	default:
		device = strings.ToLower(string(ua.Device()))
	}
	a := agentLabels{browser: orUnknown(string(ua.Browser())), os: orUnknown(osName(ua.OS())), device: orUnknown(device)}
	l.agent.Put(h, a)
	return a
}

// osName spells the parser's system families as their makers do.
func osName(os agents.OS) string {
	if os == agents.OSMacOS {
		return "macOS"
	}
	return string(os)
}

func orUnknown(s string) string {
	if s == "" {
		return Unknown
	}
	return s
}

// campaignValue is a utm_ value as a label value: without what is not
// printable (a label value is printable UTF-8), trimmed, cut to
// MaxLabelValue bytes on a rune boundary, and NoValue when nothing is left.
func campaignValue(s string) string {
	if s == "" {
		return NoValue
	}
	if !printable(s) {
		s = strings.Map(func(r rune) rune {
			if r == utf8.RuneError || !unicode.IsPrint(r) {
				return -1
			}
			return r
		}, s)
	}
	s = strings.TrimSpace(s)
	if len(s) > MaxLabelValue {
		cut := MaxLabelValue
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = strings.TrimSpace(s[:cut])
	}
	if s == "" {
		return NoValue
	}
	return s
}

// printable reports whether s is valid UTF-8 of printable runes only.
func printable(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}
