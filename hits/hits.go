// Package hits holds the rules of public page hits: which counters anyone
// may count without a token, and when a page view counts. A HEAD request
// is no page view; each client has a rate limit; a repeat from the same
// client on the same name within a window is not counted again; both limits
// fail open, so counting never depends on Redis; and a hit that could not be
// counted is forgotten by the repeat rule, so that its retry counts. A
// counted hit is also a visit of the page, unless it came through a known
// image proxy or from a known crawler (see visitors/).
//
// Clients are known only by their salted identifiers of the day
// (visitors.Keys): the limits key Redis by them, and the visitor count is
// of them, so that no address or User-Agent leaves the request.
//
// It knows neither HTTP nor Redis: app/ parses the request, resolves the
// client's address behind trusted proxies and renders the answer; cache/
// keeps the limits' state in Redis behind the Limits interface.
package hits

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/visitors"
)

// Visit is one request to count a page view. Count may keep Name after it
// returns (the counters service does), so it must be the caller's own
// memory; the other fields are only read during the call.
type Visit struct {
	Name      string     // the counter
	Addr      netip.Addr // the client's address, as resolved behind trusted proxies
	UserAgent string
	Head      bool // a HEAD request: link checkers and crawlers, no page view

	// What the labels are made of (see Labeller); only hosts, families, a
	// country and the campaign are kept of them.
	Ref      string   // the hit's ?ref=: the page's document.referrer, sent by the snippet
	RefSent  bool     // whether ?ref= was there at all (empty: no referrer)
	Referer  string   // the request's Referer: the page, for the snippet; the embedding page, for a badge
	Origin   string   // the request's Origin: the page's site, for the snippet's CORS request
	Campaign Campaign // the page URL's utm_ values, which the snippet passes on
}

// Options tune New. Zero values take the defaults.
type Options struct {
	// PublicPrefixes are the names anyone may count; default
	// DefaultPublicPrefix. Config checks them with ValidatePublicPrefix.
	PublicPrefixes []string
	// ImageProxies are the User-Agent prefixes of known image proxies, such
	// as GitHub's camo ("github-camo"); see Visit.
	ImageProxies []string
	// Visitors counts each day's distinct visitors; nil: none are counted.
	Visitors *visitors.Counter
	// Keys name clients in the limits and the visitor count; default
	// Visitors' keys, else keys under this process's own salts.
	Keys *visitors.Keys
	// Bots are the known crawlers, not visitors; default the labeller's
	// (a labelled hit tells its crawler once, for its label and its
	// visitor), else visitors.NewBots().
	Bots       *visitors.Bots
	Registerer prometheus.Registerer // nil: metrics are not registered
	Log        *slog.Logger          // default: discard
	// Labels labels each counted hit with where it came from (give it
	// Bots too); nil: hits carry no labels (breakdowns off).
	Labels *Labeller
	// Chain, when set, queues a hit's increment from the limits' answer
	// (see Hit.Chain).
	Chain Starter
}

// Service counts page hits on the public counters.
type Service struct {
	counters counters.Service
	limits   Limits // nil: no limits, every hit counts
	public   PublicNames
	proxies  []string
	visitors *visitors.Counter // nil: no visitors counted
	keys     *visitors.Keys
	bots     *visitors.Bots
	labels   *Labeller // nil: no labels
	chain    Starter
	log      *slog.Logger
	m        *metrics
}

// New returns the page-hit rules over svc. limits may be nil: there are no
// abuse limits without Redis, since their state must be shared by every
// process of the service.
func New(svc counters.Service, limits Limits, o Options) *Service {
	if o.PublicPrefixes == nil {
		o.PublicPrefixes = []string{DefaultPublicPrefix}
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Keys == nil && o.Visitors != nil {
		o.Keys = o.Visitors.Keys
	}
	if o.Keys == nil {
		o.Keys = visitors.NewKeys(visitors.LocalSalts(), nil)
	}
	if o.Bots == nil && o.Labels != nil {
		o.Bots = o.Labels.bots
	}
	if o.Bots == nil {
		o.Bots = visitors.NewBots()
	}
	return &Service{
		counters: svc, limits: limits,
		public: PublicNames(o.PublicPrefixes), proxies: o.ImageProxies,
		visitors: o.Visitors, keys: o.Keys, bots: o.Bots, labels: o.Labels, chain: o.Chain,
		log: o.Log, m: newMetrics(o.Registerer),
	}
}

// Public returns EPERMISSION unless name is under one of the public
// prefixes, so that no private counter can be read or counted without the
// token.
func (s *Service) Public(name string) error {
	if !s.public.Contains(name) {
		return counters.Errorf(counters.EPERMISSION, "Only names under the public prefixes can be used without a token.")
	}
	return nil
}

// Read returns a public counter's value without counting a hit. Returns
// EPERMISSION for a name outside the public prefixes, ENOTFOUND if the
// counter does not exist.
func (s *Service) Read(ctx context.Context, name string) (int64, error) {
	if err := s.Public(name); err != nil {
		return 0, err
	}
	ctr, err := s.counters.Get(ctx, name)
	if err != nil {
		return 0, err
	}
	return ctr.Value, nil
}

// Count counts the visit as one hit and returns the value it produced; for
// a visit that does not count (a HEAD, a repeat) it returns the current
// value, 0 for a counter that does not exist yet. Returns EPERMISSION for a
// name outside the public prefixes, and a *RateLimitedError (ERATELIMITED)
// when the client's budget is spent. A hit that counts also counts its
// visitor, unless it came through an image proxy or from a known crawler;
// a repeat's visitor was counted by its first hit.
func (s *Service) Count(ctx context.Context, v Visit) (int64, error) {
	if err := s.Public(v.Name); err != nil {
		return 0, err
	}
	if v.Head {
		return s.current(ctx, v.Name)
	}
	hit, who := s.identify(ctx, v)
	bot := crawlerUnknown
	if who != nil && !hit.Proxy && s.checks(hit) {
		hit.Chain = s.chainOf(ctx, v, &bot)
	}
	earlier, marked, err := s.admit(ctx, hit, who != nil)
	if hit.Chain != nil && hit.Chain.started() {
		// Admitted as a first, and its increment started by the limits
		// (marked even if this request's wait for them ended since).
		value, err := chained(hit.Chain)
		return s.counted(ctx, v, hit, who, true, value, bot, err)
	}
	if err != nil {
		return 0, err
	}
	if earlier != None {
		ctr, err := s.counters.Get(ctx, v.Name)
		switch {
		case err == nil:
			s.m.repeat.Inc()
			return ctr.Value, nil
		case counters.ErrorCode(err) != counters.ENOTFOUND:
			return 0, err
		case earlier == Pending:
			// The earlier hit is still creating the counter (perhaps in
			// another process), or failed and will be forgotten: this
			// one is its repeat all the same.
			s.m.repeat.Inc()
			return 0, nil
		}
		// The earlier hit created the counter, and it has been deleted
		// since: counted afresh.
	}
	value, bot, err := s.increment(ctx, v, hit.Chain, bot)
	return s.counted(ctx, v, hit, who, marked, value, bot, err)
}

// counted finishes a counted hit, whose increment answered value or err:
// a failed one is forgotten by the repeat rule if marked, one that may
// have created its counter says so, and the visitor is counted.
func (s *Service) counted(ctx context.Context, v Visit, hit Hit, who *visitor, marked bool, value int64, bot crawler, err error) (int64, error) {
	if err != nil {
		if marked {
			s.forget(ctx, hit)
		}
		return 0, err
	}
	if marked && value == 1 {
		// It may have created the counter: a repeat that finds no counter
		// must know that it was deleted since, not still being created.
		s.created(ctx, hit)
	}
	s.m.counted.Inc()
	if who != nil && s.visitors != nil && !hit.Proxy && !s.crawler(v, bot) {
		s.visitors.Mark(v.Name, who.day, who.id)
	}
	return value, nil
}

// increment counts the hit, with its labels when the service labels hits,
// and says whether it came from a crawler where that was learnt on the
// way: a labelled hit's labels say so (device "bot" is exactly the
// crawlers of the labeller's bots, see Labeller), so that its agent is
// looked up once. A chain the limits did not start (Redis failing open,
// a counter deleted since the earlier hit) has its labels worked out
// already, and bot with them.
func (s *Service) increment(ctx context.Context, v Visit, c *Chain, bot crawler) (int64, crawler, error) {
	if c != nil {
		value, err := s.counters.IncrementWith(ctx, v.Name, 1, c.Extra)
		return value, bot, err
	}
	if s.labels == nil {
		value, err := s.counters.Increment(ctx, v.Name, 1)
		return value, crawlerUnknown, err
	}
	extra, known := s.labelled(v)
	value, err := s.counters.IncrementWith(ctx, v.Name, 1, extra)
	return value, known, err
}

// labelled is what v's increment carries (nil without labels), and what
// its labels say of its agent.
func (s *Service) labelled(v Visit) (counters.Extra, crawler) {
	if s.labels == nil {
		return nil, crawlerUnknown
	}
	labels, bot := s.labels.labels(v)
	known := crawlerNo
	if bot {
		known = crawlerYes
	}
	if s.labels.bots != s.bots {
		known = crawlerUnknown
	}
	return labels.extra, known
}

// crawler is what a hit's way through Count learnt of its agent.
type crawler uint8

const (
	crawlerUnknown crawler = iota // ask s.bots
	crawlerYes
	crawlerNo
)

// crawler reports whether v's agent is a known crawler's.
func (s *Service) crawler(v Visit, known crawler) bool {
	if known == crawlerUnknown {
		return s.bots.Is(v.UserAgent)
	}
	return known == crawlerYes
}

// identify names the visit's client in the units of the limits, and its
// visitor, by their identifiers of the day (visitor.day says which). It
// returns nil when they could not be told (the day's salt could not be
// read): the hit is then counted without limits, and as no visitor.
func (s *Service) identify(ctx context.Context, v Visit) (Hit, *visitor) {
	hit := Hit{Name: v.Name, Proxy: s.ImageProxy(v.UserAgent)}
	if !s.checks(hit) && s.visitors == nil {
		return hit, nil
	}
	day, err := s.keys.Today(ctx)
	if err != nil {
		s.failOpen(ctx, callSalt, err)
		return hit, nil
	}
	if hit.Proxy {
		// The proxy fetches the image for every reader: each view counts,
		// within the proxy's budget for this counter.
		hit.Client = day.ID(rateKey(v.Addr), v.Name).String()
		return hit, &visitor{day: day.Day()}
	}
	addr := v.Addr.String()
	id := day.ID(addr, v.UserAgent)
	client := addr // rateKey's, spelt once
	if v.Addr.Is6() {
		client = rateKey(v.Addr)
	}
	hit.Client = day.ID(client).String()
	hit.Visitor = day.Of(id, v.Name).String()
	return hit, &visitor{day: day.Day(), id: id}
}

// visitor is who a visit is from, for the visitor count.
type visitor struct {
	day int64 // UTC days since 1970: the day of id's salt
	id  visitors.ID
}

// ImageProxy reports whether userAgent is that of a known image proxy, such
// as GitHub's camo, which fetches a README's images for its readers: every
// view arrives from the proxy's few addresses with its User-Agent, and
// revalidates the image each time if told to (see app/). Its hits are
// therefore not taken for repeats, and have a budget of their own per proxy
// address and counter instead of the address's. A client that pretends to
// be a proxy gains only that budget, for one counter at a time.
func (s *Service) ImageProxy(userAgent string) bool {
	for _, p := range s.proxies {
		if strings.HasPrefix(userAgent, p) {
			return true
		}
	}
	return false
}

// current is the counter's value, 0 for one that does not exist yet.
func (s *Service) current(ctx context.Context, name string) (int64, error) {
	ctr, err := s.counters.Get(ctx, name)
	if counters.ErrorCode(err) == counters.ENOTFOUND {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	return ctr.Value, nil
}

// admit applies the limits: a *RateLimitedError when the client's budget is
// spent, else what is known of the visitor's earlier hit on the name within
// the repeat window, and whether this hit is now marked as the first.
// Without limits, or when they cannot be checked, there was none, and
// nothing is marked: the hit's later calls to the limits are skipped, so
// that a failing Redis costs a hit one timeout at most.
func (s *Service) admit(ctx context.Context, h Hit, known bool) (earlier Earlier, marked bool, err error) {
	if !s.checks(h) || !known {
		return None, false, nil
	}
	wait, earlier, err := s.limits.Admit(ctx, h)
	if err != nil {
		s.failOpen(ctx, callAdmit, err)
		return None, false, nil
	}
	if wait > 0 {
		s.m.rateLimited.Inc()
		return None, false, &RateLimitedError{RetryAfter: wait}
	}
	return earlier, earlier == None && !h.Proxy, nil
}

// checks reports whether the limits check anything for h: a service with
// only the image proxies' budget on (the rate limit and the repeat window
// off) asks Redis nothing about other hits.
func (s *Service) checks(h Hit) bool { return s.limits != nil && s.limits.Checks(h.Proxy) }

// created records that h created its counter.
func (s *Service) created(ctx context.Context, h Hit) {
	if err := s.limits.Created(ctx, h); err != nil {
		s.failOpen(ctx, callCreated, err)
	}
}

// forget lets the visitor's retry of a hit that could not be counted count.
// The increment may have failed because ctx ran out: the mark must go all
// the same (the limits bound their own calls).
func (s *Service) forget(ctx context.Context, h Hit) {
	ctx = context.WithoutCancel(ctx)
	if err := s.limits.Forget(ctx, h); err != nil {
		s.failOpen(ctx, callForget, err)
	}
}

// failOpen records that the limits could not be checked or a mark not
// undone. It logs at debug
// level only: with Redis down this happens on every hit, /readyz and the
// metric already say so.
func (s *Service) failOpen(ctx context.Context, call string, err error) {
	s.m.limitErrors.WithLabelValues(call).Inc()
	s.log.DebugContext(ctx, "hit limits skipped", "call", call, "error", err.Error())
}

// rateKey is the unit the rate limit counts by: one IPv4 address, or one
// IPv6 /64, since a single IPv6 host usually holds a whole /64 and could
// otherwise take a fresh budget for every request.
func rateKey(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// ClientKey is the client a per-client limit counts by, rateKey's unit:
// the cap on live-update streams per client (package live) counts by it
// too, so that an IPv6 host cannot open a hundred streams per address of
// its /64.
func ClientKey(a netip.Addr) string { return rateKey(a) }

// RateLimitedError is Count's answer to a client whose budget is spent. It
// unwraps to an ERATELIMITED counters.Error, and says when to retry.
type RateLimitedError struct {
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string { return e.Unwrap().Error() }

func (e *RateLimitedError) Unwrap() error {
	n, unit := e.Seconds(), "seconds"
	if n == 1 {
		unit = "second"
	}
	return counters.Errorf(counters.ERATELIMITED, "Too many hits from this address; retry in %d %s.", n, unit)
}

// Seconds is RetryAfter in whole seconds, rounded up (at least 1), so that
// a client that waits as told is let in.
func (e *RateLimitedError) Seconds() int {
	return max(1, int(math.Ceil(e.RetryAfter.Seconds())))
}
