package counters

import "context"

// NewService returns the counters service over store: it validates every
// argument before the store sees it and coalesces concurrent increments
// (see coalescer) unless an option says otherwise.
func NewService(store Store, opts ...Option) Service {
	s := &service{store: store, coalesce: true}
	for _, o := range opts {
		o(s)
	}
	s.incr = store.Increment
	if s.coalesce {
		s.incr = newCoalescer(store, s.coalesceOpts).Increment
	}
	return s
}

// Option configures NewService.
type Option func(*service)

// WithCoalescing tunes the coalescing of concurrent increments.
func WithCoalescing(o CoalesceOptions) Option {
	return func(s *service) { s.coalesce, s.coalesceOpts = true, o }
}

// WithoutCoalescing makes every increment its own statement, for
// comparison and for stores that cannot take sums.
func WithoutCoalescing() Option {
	return func(s *service) { s.coalesce = false }
}

type service struct {
	store        Store
	coalesce     bool
	coalesceOpts CoalesceOptions
	incr         func(ctx context.Context, name string, by int64) (int64, error)
}

func (s *service) Increment(ctx context.Context, name string, by int64) (int64, error) {
	if err := ValidateName(name); err != nil {
		return 0, err
	}
	return s.incr(ctx, name, by)
}

func (s *service) Get(ctx context.Context, name string) (*Counter, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	return s.store.Get(ctx, name)
}

func (s *service) Set(ctx context.Context, req SetRequest) (*Counter, bool, error) {
	if err := req.Validate(); err != nil {
		return nil, false, err
	}
	return s.store.Set(ctx, req)
}

func (s *service) Delete(ctx context.Context, name string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	return s.store.Delete(ctx, name)
}

func (s *service) List(ctx context.Context, f ListFilter) (*Page, error) {
	if err := f.Normalize(); err != nil {
		return nil, err
	}
	return s.store.List(ctx, f)
}

func (s *service) Reset(ctx context.Context, req ResetRequest) (int64, error) {
	if err := req.Validate(); err != nil {
		return 0, err
	}
	return s.store.Reset(ctx, req)
}
