package cache

import (
	"context"
	"errors"
	"strconv"

	"github.com/redis/go-redis/v9"

	"countersvc/counters"
)

// Get implements counters.Store: from Redis on a hit, else from MySQL, and
// the answer is stored for the next reader unless a write got in between.
func (s *Store) Get(ctx context.Context, name string) (*counters.Counter, error) {
	if counters.IsReserved(name) {
		// Reserved names are changed by the service's own consumers inside
		// their own MySQL transactions, which this cache does not see.
		return s.next.Get(ctx, name)
	}
	if s.distrust.covers(name) {
		s.m.counter.distrusted.Inc()
		return s.getFresh(ctx, name)
	}
	key := s.keys.counter(name)
	e, err := s.lookup(ctx, key, name)
	if err != nil {
		s.m.counter.unavailable.Inc()
		return s.getFresh(ctx, name)
	}
	if e.hit {
		s.m.counter.hits.Inc()
		if e.c == nil {
			return nil, notFound()
		}
		return e.c, nil
	}
	s.m.counter.misses.Inc()
	// Readers that saw the same generation share one MySQL read. That read
	// is fresh enough for each of them: the generation was set after the
	// last invalidation, hence after every write acknowledged before they
	// looked, and the read began after the leader saw it.
	r, led := s.load(ctx, name, "g\x00"+e.gen)
	if led {
		s.fill(ctx, key, e.gen, r)
	}
	return r.result()
}

// getFresh reads MySQL without Redis. Concurrent callers share a read only
// if it began after they arrived: a read that began earlier may predate a
// write that the caller was already told about. A caller that joined an
// older read waits for it and then shares the next one, so it waits at most
// two reads and MySQL still sees one read of a name at a time.
func (s *Store) getFresh(ctx context.Context, name string) (*counters.Counter, error) {
	arrival := s.seq.Add(1)
	for {
		r, _ := s.load(ctx, name, "m\x00"+name)
		if r.start > arrival {
			return r.result()
		}
	}
}

// loaded is one MySQL read, shared by the callers of one flight.
type loaded struct {
	c     *counters.Counter
	err   error
	start uint64 // s.seq when the read began
}

// load reads name from MySQL once for all concurrent callers of flight, and
// reports whether this caller did the read.
func (s *Store) load(ctx context.Context, name, flight string) (loaded, bool) {
	led := false
	v, _, _ := s.flights.Do(flight, func() (any, error) {
		led = true
		r := loaded{start: s.seq.Add(1)}
		r.c, r.err = s.next.Get(ctx, name)
		return r, nil
	})
	return v.(loaded), led
}

// result gives each caller its own copy of the shared counter.
func (r loaded) result() (*counters.Counter, error) {
	if r.err != nil {
		return nil, r.err
	}
	c := *r.c
	return &c, nil
}

func notFound() error { return counters.Errorf(counters.ENOTFOUND, "Counter not found.") }

// entry is what Redis holds for a counter.
type entry struct {
	hit bool
	c   *counters.Counter // on a hit; nil when the counter does not exist
	gen string            // on a miss: the generation to fill under
}

var errUnexpected = errors.New("cache: unexpected reply from Redis")

// lookup reads a counter's entry; see lookupRaw.
func (s *Store) lookup(ctx context.Context, key, name string) (entry, error) {
	v, gen, err := s.lookupRaw(ctx, key)
	if err != nil {
		return entry{}, err
	}
	if v != nil {
		if c, err := decodeCounter(name, v); err == nil {
			return entry{hit: true, c: c}, nil
		}
		// An entry this code cannot read is a miss; the fill replaces it.
	}
	return entry{gen: gen}, nil
}

// lookupRaw reads an entry with a plain HMGET, which Redis still answers
// while writes are paused, pipelined with those of concurrent requests. Only an
// entry without a generation needs the reserve script. It returns the stored
// value (nil on a miss) and the generation a fill must be made under.
func (s *Store) lookupRaw(ctx context.Context, key string) (value []byte, gen string, err error) {
	var v, g any
	vals, err := s.hmget(ctx, key)
	if err == nil {
		v, g = vals[0], vals[1]
	}
	if err == nil && g == nil {
		err = s.do(ctx, "reserve", func(ctx context.Context) error {
			vals, err := reserveScript.Run(ctx, s.rdb, []string{key}, s.tokens.next(), s.ttlMillis()).Slice()
			if err == nil && len(vals) != 2 {
				err = errUnexpected
			}
			if err == nil {
				v, g = vals[0], vals[1]
			}
			return err
		})
	}
	if err != nil {
		return nil, "", err
	}
	gen, _ = g.(string)
	if gen == "" {
		return nil, "", errUnexpected
	}
	if b, ok := v.(string); ok {
		return []byte(b), gen, nil
	}
	return nil, gen, nil
}

// hmget reads the v and g fields of key, in a pipeline with the reads of
// concurrent requests.
func (s *Store) hmget(ctx context.Context, key string) ([]any, error) {
	cmd, err := s.reads.call(ctx, func(ctx context.Context, p redis.Pipeliner) redis.Cmder {
		return p.HMGet(ctx, key, "v", "g")
	})
	if err != nil {
		return nil, err
	}
	vals, err := cmd.(*redis.SliceCmd).Result()
	if err == nil && len(vals) != 2 {
		err = errUnexpected
	}
	return vals, err
}

// fill stores what a MySQL read found, under the generation seen before it.
func (s *Store) fill(ctx context.Context, key, gen string, r loaded) {
	switch {
	case r.err == nil:
		s.fillRaw(ctx, key, gen, encodeCounter(r.c))
	case counters.ErrorCode(r.err) == counters.ENOTFOUND:
		s.fillRaw(ctx, key, gen, encodeCounter(nil))
	}
}

// fillRaw stores val unless the entry's generation moved on since gen was
// seen: a write got in between, and val may predate it.
func (s *Store) fillRaw(ctx context.Context, key, gen string, val []byte) {
	var stored int64
	err := s.do(ctx, "fill", func(ctx context.Context) error {
		var err error
		stored, err = fillScript.Run(ctx, s.rdb, []string{key}, gen, val, s.ttlMillis()).Int64()
		return err
	})
	if err == nil && stored == 0 {
		s.m.conflicts.Inc()
	}
}

func (s *Store) ttlMillis() string { return strconv.FormatInt(s.o.TTL.Milliseconds(), 10) }
