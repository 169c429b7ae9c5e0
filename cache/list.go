package cache

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/counters"
)

// List implements counters.Store. By default (ListTTL 0) a listing is read
// from MySQL, not shared with one already in flight, which may have begun
// before a write answered, so that it shows every write answered before
// it began. Where the operator lets lists lag, pages are never
// invalidated: each carries the time its MySQL read began and is served
// only while younger than ListTTL, so a listing lags writes by at most
// ListTTL however late Redis stores it. (Lag measured with this host's
// clock; hosts must keep time.) A Fresh listing is read from MySQL.
func (s *Store) List(ctx context.Context, f counters.ListFilter) (*counters.Page, error) {
	if f.Fresh || s.o.ListTTL == 0 {
		return s.next.Store.List(ctx, f)
	}
	key := s.keys.list(f)
	p, err := s.listLookup(ctx, key)
	switch {
	case err != nil:
		s.m.list.unavailable.Inc()
	case p != nil:
		s.m.list.hits.Inc()
		return p, nil
	default:
		s.m.list.misses.Inc()
	}
	for {
		r, led := s.loadList(ctx, key, f)
		if led && err == nil {
			s.listFill(ctx, key, r)
		}
		if time.Since(r.at) <= s.o.ListTTL {
			return r.result()
		}
		// The shared read began too long ago (a very slow MySQL): read again.
	}
}

type listed struct {
	p   *counters.Page
	err error
	at  time.Time // when the MySQL read began
}

func (s *Store) loadList(ctx context.Context, key string, f counters.ListFilter) (listed, bool) {
	led := false
	v, _, _ := s.flights.Do("l\x00"+key, func() (any, error) {
		led = true
		r := listed{at: time.Now()}
		r.p, r.err = s.next.Store.List(ctx, f)
		return r, nil
	})
	return v.(listed), led
}

// result gives each caller its own page: callers of one flight share it.
func (r listed) result() (*counters.Page, error) {
	if r.err != nil {
		return nil, r.err
	}
	p := &counters.Page{Counters: append([]counters.Counter(nil), r.p.Counters...), NextAfter: r.p.NextAfter}
	return p, nil
}

// listLookup returns a cached page young enough to serve, or nil.
func (s *Store) listLookup(ctx context.Context, key string) (*counters.Page, error) {
	var b []byte
	err := s.do(ctx, "list_read", func(ctx context.Context) error {
		var err error
		b, err = s.rdb.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			b, err = nil, nil
		}
		return err
	})
	if err != nil || b == nil {
		return nil, err
	}
	p, at, err := decodePage(b)
	if err != nil || time.Since(at) > s.o.ListTTL {
		return nil, nil
	}
	return p, nil
}

// listFill stores a page with an absolute expiry, so that a SET that Redis
// runs late (after a pause) expires when the page would have.
func (s *Store) listFill(ctx context.Context, key string, r listed) {
	exp := r.at.Add(s.o.ListTTL)
	if r.err != nil || !time.Now().Before(exp) {
		return
	}
	s.do(ctx, "list_fill", func(ctx context.Context) error {
		return s.rdb.SetArgs(ctx, key, encodePage(r.p, r.at), redis.SetArgs{ExpireAt: exp}).Err()
	})
}
