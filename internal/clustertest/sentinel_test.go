package clustertest_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"countersvc/internal/apptest"
	"countersvc/internal/config"
	"countersvc/internal/testenv"
)

// Three service processes share a MySQL database and a Redis primary
// with a replica under Sentinel. When the primary changes under load, by a
// planned SENTINEL FAILOVER or a kill -9, no request fails and no increment
// is lost: the cache falls back to MySQL while Redis is away. Stale reads
// are counted and reported: replication is asynchronous, so invalidations
// the old primary had not passed on are lost with it, and an old value
// cached there may be served until its entry expires.
func TestSentinelFailoverUnderLoadFailsNothingAndLosesNothing(t *testing.T) {
	testenv.NeedCluster(t)
	const workers, d, at = 24, 10 * time.Second, 3 * time.Second
	pick := func(r *rand.Rand) string {
		if r.IntN(2) == 0 {
			return "hot"
		}
		return fmt.Sprintf("c/%d", r.IntN(100))
	}
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, s *testenv.Sentinel)
	}{
		{"SENTINEL FAILOVER", func(t *testing.T, s *testenv.Sentinel) { s.Failover(t) }},
		{"primary killed", func(t *testing.T, s *testenv.Sentinel) {
			old := s.Primary(t)
			old.Kill()
			s.WaitForPrimaryOtherThan(t, old)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testenv.StartSentinel(t)
			dsn := testenv.MySQLDSN(t)
			var procs []*apptest.Env
			for range 3 {
				procs = append(procs, apptest.NewWithDSN(t, dsn, func(c *config.Config) { c.RedisURL = s.URL() }))
			}
			l := newLoad(procs)
			l.staleMeasured = true
			faulted := make(chan time.Duration, 1)
			go func() {
				time.Sleep(at)
				start := time.Now()
				tc.fault(t, s)
				faulted <- time.Since(start)
			}()
			l.run(workers, d, pick)
			t.Logf("the fault began %v after the load, the new primary answered %v later", at, (<-faulted).Round(time.Millisecond))
			l.check(t, d)
		})
	}
}
