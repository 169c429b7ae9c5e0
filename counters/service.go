package counters

import (
	"context"
	"iter"
)

// NewService returns the counters service over b: it validates every
// argument before the backend sees it. Coalescing and caching are wrappers
// of the backend, added at wiring time (internal/wire).
func NewService(b Backend) Service {
	return &service{store: b.Store, once: b.Once, imports: b.Imports}
}

type service struct {
	store   Store
	once    OnceStore
	imports Importer
}

func (s *service) Increment(ctx context.Context, name string, by int64) (int64, error) {
	if err := ValidateName(name); err != nil {
		return 0, err
	}
	return s.store.Increment(ctx, name, by)
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

func (s *service) Import(ctx context.Context, opts ImportOptions, lines iter.Seq[ImportLine]) (*ImportReport, error) {
	if err := opts.Validate(); err != nil {
		return NewImportReport(opts), err
	}
	if s.imports == nil {
		return NewImportReport(opts), Errorf(EINTERNAL, "imports are not wired")
	}
	return s.imports.Import(ctx, opts, CheckImportLines(lines))
}
