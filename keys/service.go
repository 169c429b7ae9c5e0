package keys

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/foundation/deadline"
)

// Options are the keys' settings.
type Options struct {
	// AdminToken is COUNTERS_API_TOKEN. Empty: the private API answers
	// only loopback clients (and API keys).
	AdminToken string
	// Recheck is how long a verified key is believed before MySQL is asked
	// again in the background; default 500ms. MaxStale is how long it is
	// believed at most, after which a request waits for MySQL's answer:
	// it bounds how long a revocation made by another process takes to be
	// seen here; default 900ms (the contract allows 1s).
	Recheck, MaxStale time.Duration
	// LookupTimeout bounds a request's wait for MySQL to look its key up
	// (COUNTERS_MYSQL_TIMEOUT); default deadline.Default. Only that wait
	// gets a deadline of its own: most requests find their key believed,
	// or bring none, and pay for no timer.
	LookupTimeout time.Duration
	Registerer    prometheus.Registerer
	Log           *slog.Logger
	Now           func() time.Time // injectable clock of expiries; default time.Now
}

// Service authenticates requests and manages the keys.
type Service struct {
	store Store
	token []byte // nil: no admin token
	o     Options
	m     *metrics

	mu     sync.RWMutex
	seen   map[[32]byte]*verified // by the secret's hash
	usage  map[int64]*atomic.Bool // by key id: used since the last Touch
	flight singleflight.Group

	watchMu sync.Mutex
	watches map[*watch]struct{} // the open streams' keys (Watch)
}

// verified is what this process believes of a secret, and since when.
type verified struct {
	key        *Key // nil: no key has this secret
	principal  *Principal
	at         time.Time // when the lookup started
	used       *atomic.Bool
	refreshing atomic.Bool // a lookup to replace this one is running
}

// maxSeen bounds the secrets remembered, so that a stream of made-up
// secrets cannot grow the map without end; past it the map starts afresh.
const maxSeen = 10000

// New returns the keys over store.
func New(store Store, o Options) *Service {
	if o.Recheck <= 0 {
		o.Recheck = 500 * time.Millisecond
	}
	if o.MaxStale < o.Recheck {
		o.MaxStale = max(900*time.Millisecond, o.Recheck)
	}
	if o.LookupTimeout <= 0 {
		o.LookupTimeout = deadline.Default
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Service{store: store, o: o, m: newMetrics(o.Registerer),
		seen: map[[32]byte]*verified{}, usage: map[int64]*atomic.Bool{}, watches: map[*watch]struct{}{}}
	if o.AdminToken != "" {
		s.token = []byte(o.AdminToken)
	}
	return s
}

// Protected reports whether the service runs without an admin token, and
// so serves its private API only to loopback clients and API keys.
func (s *Service) Protected() bool { return s.token == nil }

// Credentials are what a request shows of itself.
type Credentials struct {
	Bearer string // the Authorization bearer; "" when there is none
	// OtherScheme says an Authorization header of another scheme than
	// Bearer came instead: it authenticates nobody.
	OtherScheme bool
	// Local says the client is on this machine (a loopback address, not
	// behind a proxy), as far as the HTTP layer can tell. It is read only
	// when no credentials came (no Bearer, no OtherScheme), and need not be
	// found out otherwise.
	Local bool
}

// Authenticate returns who the credentials are. Returns EUNAUTHENTICATED
// when credentials are needed and missing, or the bearer is no key, a
// revoked or expired key; EUNAVAILABLE when a key cannot be looked up.
func (s *Service) Authenticate(ctx context.Context, c Credentials) (*Principal, error) {
	switch {
	case c.OtherScheme:
		s.m.fail(reasonUnknown)
		return nil, counters.Errorf(counters.EUNAUTHENTICATED, "Send the token as \"Authorization: Bearer <token>\".")
	case c.Bearer == "" && s.token == nil && c.Local:
		return admin, nil
	case c.Bearer == "" && s.token == nil:
		s.m.fail(reasonMissing)
		return nil, counters.Errorf(counters.EUNAUTHENTICATED,
			"COUNTERS_API_TOKEN is not set, so this service answers its private API only to clients on its own machine; send an API key as a bearer token, or set COUNTERS_API_TOKEN.")
	case c.Bearer == "":
		s.m.fail(reasonMissing)
		return nil, counters.Errorf(counters.EUNAUTHENTICATED, "A valid bearer token is required.")
	case s.token != nil && subtle.ConstantTimeCompare([]byte(c.Bearer), s.token) == 1:
		return admin, nil
	case !looksLikeSecret(c.Bearer):
		s.m.fail(reasonUnknown)
		return nil, errUnknown
	}
	v, err := s.verify(ctx, hashSecret(c.Bearer))
	if err != nil {
		return nil, err
	}
	switch {
	case v.key == nil:
		s.m.fail(reasonUnknown)
		return nil, errUnknown
	case v.key.RevokedAt != nil:
		s.m.fail(reasonRevoked)
		return nil, counters.Errorf(counters.EUNAUTHENTICATED, "This API key has been revoked.")
	case v.key.expired(s.o.Now()):
		s.m.fail(reasonExpired)
		return nil, counters.Errorf(counters.EUNAUTHENTICATED, "This API key expired at %s.", v.key.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if !v.used.Load() { // a load first: most requests then write nothing shared
		v.used.Store(true)
	}
	return v.principal, nil
}

var errUnknown = counters.Errorf(counters.EUNAUTHENTICATED, "The bearer token is neither an API key nor the API token.")

// verify returns what is known of the secret's hash. Past Recheck one
// request starts a lookup in the background and the others go on with what
// is known, so that a busy key never makes its requests wait all at once;
// past MaxStale they wait for the store. Concurrent requests with one
// secret share one lookup.
func (s *Service) verify(ctx context.Context, hash [32]byte) (*verified, error) {
	s.mu.RLock()
	v := s.seen[hash]
	s.mu.RUnlock()
	if v != nil {
		age := time.Since(v.at)
		if age < s.o.Recheck {
			return v, nil
		}
		if age < s.o.MaxStale {
			if v.refreshing.CompareAndSwap(false, true) {
				go s.refresh(hash)
			}
			return v, nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.LookupTimeout)
	defer cancel()
	return s.lookupShared(ctx, hash)
}

// lookupShared looks the hash up, in one lookup with every concurrent
// caller that asks for the same hash.
func (s *Service) lookupShared(ctx context.Context, hash [32]byte) (*verified, error) {
	r, err, _ := s.flight.Do(string(hash[:]), func() (any, error) { return s.lookup(ctx, hash) })
	if err != nil {
		return nil, err
	}
	return r.(*verified), nil
}

// refresh looks the hash up again for verify, within what is left of
// MaxStale: a lookup that fails leaves the entry to age, and the requests
// after MaxStale ask the store themselves.
func (s *Service) refresh(hash [32]byte) {
	ctx, cancel := context.WithTimeout(context.Background(), s.o.MaxStale-s.o.Recheck)
	defer cancel()
	s.flight.Do(string(hash[:]), func() (any, error) { return s.lookup(ctx, hash) })
}

func (s *Service) lookup(ctx context.Context, hash [32]byte) (*verified, error) {
	v := &verified{at: time.Now()} // before the query: a revocation committed since is seen next time
	k, err := s.store.ByHash(ctx, hash)
	if err != nil && counters.ErrorCode(err) != counters.ENOTFOUND {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if k != nil {
		v.key, v.principal = k, newPrincipal(k, hash)
		if v.used = s.usage[k.ID]; v.used == nil {
			v.used = new(atomic.Bool)
			s.usage[k.ID] = v.used
		}
	}
	if len(s.seen) >= maxSeen {
		clear(s.seen)
	}
	s.seen[hash] = v
	return v, nil
}

// forget drops what this process believes of the key, so that its own
// revocation is seen at once.
func (s *Service) forget(id int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for h, v := range s.seen {
		if v.key != nil && v.key.ID == id {
			delete(s.seen, h)
		}
	}
}

// watch is an open stream's hold on the key it was opened with (Watch).
type watch struct {
	hash [32]byte
	gone chan struct{} // closed once the key is revoked or expired
}

// Watch returns a channel that is closed once p's key may no longer be
// used, revoked by any process or expired, and a stop to call when the
// caller no longer needs to know. It is for answers that outlive their
// request, live-update streams: a request is authenticated once, at its
// start, so a stream opened with a key would otherwise go on reading
// after every request of the key is refused. RecheckWatches finds the
// revocation within the bound of the requests' refusal. The admin (the
// API token, a loopback client without one) and a public request (p nil)
// cannot be revoked: their channel is nil, never closed.
func (s *Service) Watch(p *Principal) (gone <-chan struct{}, stop func()) {
	if p == nil || p.key == nil {
		return nil, func() {}
	}
	w := &watch{hash: p.hash, gone: make(chan struct{})}
	s.watchMu.Lock()
	s.watches[w] = struct{}{}
	s.watchMu.Unlock()
	return w.gone, func() {
		s.watchMu.Lock()
		delete(s.watches, w)
		s.watchMu.Unlock()
	}
}

// RecheckWatches checks the watched keys until ctx ends, every half
// Recheck, and ends the watches of those revoked or expired. It goes
// through what this process believes of each key, as a request does, but
// never believes it longer than Recheck, nor in the background: a
// revocation committed anywhere is seen within Recheck and a half plus one
// lookup (750 ms and a query by default), inside the second within which
// every process refuses the key's requests; a revocation by this process
// (forget) within half a Recheck. It costs a lookup per watched key per
// Recheck at most, shared with the key's requests, whatever the number of
// its streams, and nothing to anybody else: writes and other requests never
// come here.
//
// Not deadline.Every, whose rounds end at the interval: a request that
// asks for the same key meanwhile joins the round's lookup (flight), and
// must get its own LookupTimeout from it, not a 503 after 250 ms of a slow
// MySQL. A round that takes longer only delays the next.
func (s *Service) RecheckWatches(ctx context.Context) {
	t := time.NewTicker(s.o.Recheck / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.recheckWatches(ctx)
		}
	}
}

func (s *Service) recheckWatches(ctx context.Context) {
	byKey := map[[32]byte][]*watch{}
	s.watchMu.Lock()
	for w := range s.watches {
		byKey[w.hash] = append(byKey[w.hash], w)
	}
	s.watchMu.Unlock()
	now := s.o.Now()
	for hash, ws := range byKey {
		s.mu.RLock()
		v := s.seen[hash]
		s.mu.RUnlock()
		if v == nil || time.Since(v.at) >= s.o.Recheck {
			var err error
			lctx, cancel := context.WithTimeout(ctx, s.o.LookupTimeout)
			v, err = s.lookupShared(lctx, hash)
			cancel()
			if err != nil {
				// MySQL cannot say: the streams stay until it can. A
				// request would be refused 503 meanwhile, not 401, and the
				// stream itself waits for MySQL to send anything.
				continue
			}
		}
		if v.key != nil && v.key.RevokedAt == nil && !v.key.expired(now) {
			continue
		}
		s.watchMu.Lock()
		for _, w := range ws {
			if _, ok := s.watches[w]; ok { // not stopped meanwhile: closed once
				delete(s.watches, w)
				close(w.gone)
			}
		}
		s.watchMu.Unlock()
	}
}

// Create makes a key and returns it with its secret, which is not kept
// and cannot be shown again. Returns EINVALID for a bad request. Only an
// admin may call it (the route's access: APIKeys).
func (s *Service) Create(ctx context.Context, req CreateRequest) (*Key, string, error) {
	now := s.o.Now().UTC().Truncate(time.Microsecond)
	if err := req.Validate(now); err != nil {
		return nil, "", err
	}
	k := &Key{Name: req.Name, Scopes: req.Scopes, Prefixes: req.Prefixes, Companies: req.Companies,
		CreatedAt: now, ExpiresAt: req.ExpiresAt}
	secret := newSecret()
	if err := s.store.Create(ctx, k, hashSecret(secret)); err != nil {
		return nil, "", err
	}
	return k, secret, nil
}

// List returns the keys that are not revoked.
func (s *Service) List(ctx context.Context) ([]Key, error) {
	return s.store.List(ctx)
}

// Get returns a key that is not revoked. Returns ENOTFOUND when there is no such key.
func (s *Service) Get(ctx context.Context, id int64) (*Key, error) {
	return s.store.Get(ctx, id)
}

// Revoke revokes a key: this process refuses it at once, every other one
// within Recheck. Returns ENOTFOUND when there is no such key (or it is revoked already).
func (s *Service) Revoke(ctx context.Context, id int64) error {
	if err := s.store.Revoke(ctx, id, s.o.Now().UTC()); err != nil {
		return err
	}
	s.forget(id)
	return nil
}

// Allow checks that the principal of ctx (NewContext) may do a to r, and
// counts a refusal in the metrics. It is the one check of what a request
// may touch: app/ calls it at each route, before the handler, with the
// resource the route names. A context without a principal is refused.
func (s *Service) Allow(ctx context.Context, a Access, r Resource) error {
	err := FromContext(ctx).May(a, r)
	if err != nil {
		s.m.fail(reasonScope)
	}
	return err
}

// TouchEvery writes, every interval until ctx ends, when the keys used
// since the last time were used: one statement per interval for all of
// them, never one per request. A failure is logged and the usage kept for
// the next round.
func (s *Service) TouchEvery(ctx context.Context, every time.Duration) {
	deadline.Every(ctx, every, s.Touch)
}

// Touch writes now as the last use of the keys used since the last Touch,
// in one statement. A failure is logged and the usage kept for next time.
func (s *Service) Touch(ctx context.Context) {
	var ids []int64
	var flags []*atomic.Bool
	s.mu.RLock()
	for id, used := range s.usage {
		if used.Swap(false) {
			ids, flags = append(ids, id), append(flags, used)
		}
	}
	s.mu.RUnlock()
	if len(ids) == 0 {
		return
	}
	if err := s.store.Touch(ctx, ids, s.o.Now().UTC()); err != nil {
		s.o.Log.Warn("recording when API keys were last used", "keys", len(ids), "error", err.Error())
		for _, f := range flags {
			f.Store(true)
		}
	}
}
