package cache

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/counters"
)

// Get implements counters.Store: from Redis on a hit, else from MySQL, and
// the answer is stored for the next reader unless a write got in between.
func (s *Store) Get(ctx context.Context, name string) (*counters.Counter, error) {
	if counters.IsReserved(name) {
		// Reserved names are changed by the service's own consumers inside
		// their own MySQL transactions, which this cache does not see.
		return s.next.Store.Get(ctx, name)
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
	// Readers that saw the same generation share one MySQL read, and its
	// settling (see settle). That read is fresh enough for each of them: the
	// generation was set after the last invalidation, hence after every
	// write acknowledged before they looked, and the read began after the
	// leader saw it.
	r, _ := s.load(ctx, name, "g\x00"+e.gen, func(r loaded) loaded { return s.settle(ctx, key, name, e.gen, r) })
	return r.result()
}

// getFresh reads MySQL without Redis. Concurrent callers share a read only
// if it began after they arrived: a read that began earlier may predate a
// write that the caller was already told about. A caller that joined an
// older read waits for it and then shares the next one, so it waits at most
// two reads and MySQL still sees one read of a name at a time.
//
// What it read may be newer than entries Redis still serves to others: a
// write committed, its invalidation not confirmed, its answer held back
// (Backend, in lease.go). Answered at once, this read could show the write and a later
// read elsewhere the value before it. So the answer waits, like that
// write, until every entry older than the read has expired.
func (s *Store) getFresh(ctx context.Context, name string) (*counters.Counter, error) {
	arrival := s.seq.Add(1)
	for {
		r, _ := s.load(ctx, name, "m\x00"+name, nil)
		if r.start > arrival {
			s.outliveLease(r.readAt, opRead)
			return r.result()
		}
	}
}

// loaded is one MySQL read, shared by the callers of one flight.
type loaded struct {
	c      *counters.Counter
	err    error
	start  uint64    // s.seq when the read began
	readAt time.Time // when the read began: its entry's lease starts here
}

// load reads name from MySQL once for all concurrent callers of flight,
// then, if settle is not nil, settles what it read in the same flight; it
// reports whether this caller did the work.
func (s *Store) load(ctx context.Context, name, flight string, settle func(loaded) loaded) (loaded, bool) {
	led := false
	v, _, _ := s.flights.Do(flight, func() (any, error) {
		led = true
		r := loaded{start: s.seq.Add(1), readAt: time.Now()}
		r.c, r.err = s.next.Store.Get(ctx, name)
		if settle != nil {
			r = settle(r)
		}
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
			vals, err := reserveScript.Run(ctx, s.rdb, []string{key}, s.tokens.next(), s.leaseMillis()).Slice()
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

// settle makes what a read from MySQL found safe to answer, which it is
// only if Redis can no longer serve anything older afterwards (a read that
// showed a write must not be followed by one that does not):
//
//   - it is stored as the entry's value: the first fill of a generation
//     wins, so no fill prepared earlier can replace it;
//   - another fill of the generation won: the stored value is the answer;
//   - the generation moved on (a write) or Redis failed: a confirmed
//     invalidation shuts out whatever the entry holds or will be filled
//     with from reads that may predate this one;
//   - failing that, the answer waits out the lease, as in getFresh.
func (s *Store) settle(ctx context.Context, key, name, gen string, r loaded) loaded {
	var val []byte
	switch {
	case r.err == nil:
		val = encodeCounter(r.c)
	case counters.ErrorCode(r.err) == counters.ENOTFOUND:
		val = encodeCounter(nil)
	default:
		return r // an error answers nothing
	}
	stored, won, err := s.fillRaw(ctx, key, gen, val, r.readAt)
	if err == nil && stored {
		return r
	}
	if err == nil && won != nil {
		if c, derr := decodeCounter(name, won); derr == nil {
			if c == nil {
				return loaded{start: r.start, readAt: r.readAt, err: notFound()}
			}
			return loaded{start: r.start, readAt: r.readAt, c: c}
		}
	}
	if s.invalidateKey(ctx, key) != nil {
		s.outliveLease(r.readAt, opRead)
	}
	return r
}

// fillRaw stores val unless the entry's generation moved on since gen was
// seen (a write got in between, and val may predate it) or another fill of
// the generation got there first, whose value it returns. The entry expires
// a lease after readAt, when the read of val began.
func (s *Store) fillRaw(ctx context.Context, key, gen string, val []byte, readAt time.Time) (stored bool, won []byte, err error) {
	var res any
	err = s.do(ctx, "fill", func(ctx context.Context) error {
		var err error
		res, err = fillScript.Run(ctx, s.rdb, []string{key}, gen, val, s.expireAt(readAt)).Result()
		return err
	})
	if err != nil {
		return false, nil, err
	}
	switch v := res.(type) {
	case int64:
		stored = v == 1
	case string:
		won = []byte(v)
	}
	if !stored {
		s.m.conflicts.Inc()
	}
	return stored, won, nil
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
