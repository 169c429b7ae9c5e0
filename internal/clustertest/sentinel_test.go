package clustertest_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/config"
	"github.com/countersvc/countersvc/internal/testenv"
)

// Three service processes share a MySQL database and a Redis primary
// with a replica under Sentinel. When the primary changes under load, by a
// planned SENTINEL FAILOVER or a kill -9, no request fails and no increment
// is lost: the cache falls back to MySQL while Redis is away. A read may
// be stale, but by less than the lease: replication is asynchronous, so
// invalidations that the old primary confirmed and had not passed on are
// lost with it, and the new primary may serve an entry that predates a
// write until the entry's lease ends (see cache/lease.go). Every entry
// expires a lease after the MySQL read that filled it began, which was
// before the write it misses committed, so no read that begins more than
// the lease (plus the clock-skew margin) after a write was answered shows
// what preceded it.
func TestSentinelFailoverUnderLoadFailsNothingLosesNothingAndIsStaleByLessThanTheLease(t *testing.T) {
	testenv.NeedCluster(t)
	const workers, d, at = 24, 10 * time.Second, 3 * time.Second
	pick := func(r *rand.Rand) string {
		if r.IntN(2) == 0 {
			return "hot"
		}
		return fmt.Sprintf("c/%d", r.IntN(100))
	}
	for _, tc := range sentinelFaults {
		t.Run(tc.name, func(t *testing.T) {
			s := testenv.StartSentinel(t)
			dsn := testenv.MySQLDSN(t)
			var procs []*apptest.Env
			for range 3 {
				procs = append(procs, apptest.NewWithDSN(t, dsn, func(c *config.Config) { c.Cache.RedisURL = s.URL() }))
			}
			l := newLoad(procs)
			cfg := config.Defaults()
			l.staleWithin = cfg.Cache.Lease + cfg.Cache.ClockSkew + schedulingTolerance
			faulted := make(chan time.Duration, 1)
			go func() {
				time.Sleep(at)
				start := time.Now()
				tc.fault(t, s)
				faulted <- time.Since(start)
			}()
			// Readers of the hot counter alone, mostly from the cache,
			// find the entries a lost invalidation left behind.
			var readers sync.WaitGroup
			readers.Add(1)
			go func() {
				defer readers.Done()
				l.drive(workers/4, d, func(_ *rand.Rand, _, reader *apptest.Env) { l.read(reader, "hot") })
			}()
			l.run(workers, d, pick)
			readers.Wait()
			t.Logf("the fault began %v after the load, the new primary answered %v later", at, (<-faulted).Round(time.Millisecond))
			l.check(t, d)
		})
	}
}

// schedulingTolerance is the slack of the staleness bound beyond the lease
// and the clock-skew margin. The test, the services and Redis read one
// host's clock, and the test times a read's start before it sends it and
// an answer after it arrived, both on the safe side; what is left is that
// an entry's expiry is whole milliseconds, judged by Redis's clock as a
// command starts (and a script's start for all of it), while the test
// measures on Go's monotonic clock. 100 ms covers that many times over,
// and is a tenth of what an unbounded window (seconds, before the lease)
// would show.
const schedulingTolerance = 100 * time.Millisecond

// sentinelFaults are the ways a Sentinel-watched Redis changes primary:
// a planned failover, and the primary killed.
var sentinelFaults = []struct {
	name  string
	fault func(t *testing.T, s *testenv.Sentinel)
}{
	{"SENTINEL FAILOVER", func(t *testing.T, s *testenv.Sentinel) { s.Failover(t) }},
	{"primary killed", func(t *testing.T, s *testenv.Sentinel) {
		old := s.Primary(t)
		old.Kill()
		s.WaitForPrimaryOtherThan(t, old)
	}},
}
