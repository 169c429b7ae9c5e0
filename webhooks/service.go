package webhooks

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"time"

	"github.com/countersvc/countersvc/counters"
)

// Store keeps hooks and their deliveries (storage.HookStore).
type Store interface {
	// CreateHook assigns h its ID, unless its owner already has limit
	// hooks: EOUTOFRANGE.
	CreateHook(ctx context.Context, h *Hook, limit int) error
	Hook(ctx context.Context, id int64) (*Hook, error)
	Hooks(ctx context.Context) ([]Hook, error)
	DeleteHook(ctx context.Context, id int64) error
	EnableHook(ctx context.Context, id int64) error
	// RotateSecret makes secret the hook's secret and the one it replaces
	// its previous secret until until (dropping any older one), and
	// returns the hook as it is then; ENOTFOUND.
	RotateSecret(ctx context.Context, id int64, secret string, until time.Time) (*Hook, error)
	Deliveries(ctx context.Context, hookID int64, limit int) ([]Delivery, error)
}

// Options are the hooks' settings.
type Options struct {
	// MaxPerKey is how many hooks one API key (or the admin token) may
	// have; default 100 (COUNTERS_WEBHOOK_MAX_PER_KEY).
	MaxPerKey int
	// Guard checks the URLs' addresses (see NewGuard).
	Guard *Guard
	// Now is the clock a rotation's grace starts from (default time.Now):
	// the relay's, which ends it; and an alert's watch (the store's, by
	// which history counts).
	Now func() time.Time
	// Counts is history's, which alerts sum; without it alerts are refused.
	Counts Counts
}

// Service implements API over a Store.
type Service struct {
	store Store
	o     Options
}

var _ API = (*Service)(nil)

// NewService returns the hooks kept in store.
func NewService(store Store, o Options) *Service {
	if o.MaxPerKey <= 0 {
		o.MaxPerKey = DefaultMaxPerKey
	}
	if o.Guard == nil {
		o.Guard = NewGuard(false)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{store: store, o: o}
}

// Create implements API.
func (s *Service) Create(ctx context.Context, req CreateRequest) (*Hook, error) {
	h, err := req.Validate()
	if err != nil {
		return nil, err
	}
	if err := s.o.Guard.CheckURL(ctx, h.URL); err != nil {
		return nil, err
	}
	if h.Alert != nil {
		if err := s.watchFromNow(ctx, h); err != nil {
			return nil, err
		}
	}
	h.Secret = newSecret()
	if err := s.store.CreateHook(ctx, h, s.o.MaxPerKey); err != nil {
		return nil, err
	}
	return h, nil
}

// watchFromNow starts an alert's watch now: the steps its quarter hour
// already holds are not the hook's (see Alert.Span).
func (s *Service) watchFromNow(ctx context.Context, h *Hook) error {
	if s.o.Counts == nil {
		return counters.Errorf(counters.EINVALID, "Alerts need the counters' history, which this service does not read.")
	}
	now := s.o.Now().UTC().Truncate(time.Microsecond) // as MySQL keeps it
	base, err := QuarterSum(ctx, s.o.Counts, h.Target, h.IsPrefix, now, now)
	if err != nil {
		return err
	}
	h.Alert.Since, h.Alert.Baseline = now, base
	return nil
}

// Get implements API.
func (s *Service) Get(ctx context.Context, id int64) (*Hook, error) { return s.store.Hook(ctx, id) }

// List implements API.
func (s *Service) List(ctx context.Context) ([]Hook, error) { return s.store.Hooks(ctx) }

// Delete implements API.
func (s *Service) Delete(ctx context.Context, id int64) error { return s.store.DeleteHook(ctx, id) }

// Enable implements API.
func (s *Service) Enable(ctx context.Context, id int64) (*Hook, error) {
	if err := s.store.EnableHook(ctx, id); err != nil {
		return nil, err
	}
	return s.store.Hook(ctx, id)
}

// Rotate implements API.
func (s *Service) Rotate(ctx context.Context, id int64) (*Hook, error) {
	until := s.o.Now().Add(RotationGrace).UTC().Truncate(time.Microsecond) // as MySQL keeps it
	return s.store.RotateSecret(ctx, id, newSecret(), until)
}

// MaxDeliveries is the longest page of deliveries; DefaultDeliveries the
// page without a limit.
const (
	MaxDeliveries     = 1000
	DefaultDeliveries = 100
	// DefaultMaxPerKey is how many hooks an API key may have by default.
	DefaultMaxPerKey = 100
)

// Deliveries implements API.
func (s *Service) Deliveries(ctx context.Context, id int64, limit int) ([]Delivery, error) {
	if limit == 0 {
		limit = DefaultDeliveries
	}
	if limit < 1 || limit > MaxDeliveries {
		return nil, counters.Errorf(counters.EINVALID, "\"limit\" must be 1 to %d.", MaxDeliveries)
	}
	return s.store.Deliveries(ctx, id, limit)
}

// CheckURL refuses a URL whose host resolves to an address the guard
// refuses (every address it resolves to: a name with one public and one
// private address is refused), or that does not resolve. The relay checks
// again the address it actually dials, since a name may resolve
// differently later (DNS rebinding).
func (g *Guard) CheckURL(ctx context.Context, raw string) error {
	if g.allowAll {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return counters.Errorf(counters.EINVALID, "\"url\" must be an absolute http or https URL.")
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", host); err != nil || len(addrs) == 0 {
		return counters.Errorf(counters.EINVALID, "\"url\": the host %q does not resolve.", host)
	}
	for _, a := range addrs {
		if err := g.check(a.Unmap()); err != nil {
			where := host
			if a.String() != host {
				where += " resolves to " + a.String() + ","
			} else {
				where += " is"
			}
			return counters.Errorf(counters.EINVALID,
				"\"url\": %s a loopback, private, link-local or otherwise special-purpose address; such URLs are refused unless COUNTERS_WEBHOOK_ALLOW_PRIVATE=true.", where)
		}
	}
	return nil
}
