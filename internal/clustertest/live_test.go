package clustertest_test

import (
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/config"
	"github.com/countersvc/countersvc/internal/testenv"
)

// A live-update stream on one process keeps getting the increments made
// on another through a Sentinel failover, planned or by a kill -9: each
// value within 5 seconds, none going back. Pub/sub goes silent after a
// failover without an error (the subscription stays on the old primary);
// the probe of the subscription and the per-process check of watched
// counters against MySQL make up for it.
func TestLiveUpdatesCatchUpThroughASentinelFailover(t *testing.T) {
	testenv.NeedCluster(t)
	for _, tc := range sentinelFaults {
		t.Run(tc.name, func(t *testing.T) {
			s := testenv.StartSentinel(t)
			dsn := testenv.MySQLDSN(t)
			viaSentinel := func(c *config.Config) { c.Cache.RedisURL = s.URL() }
			a, b := apptest.NewWithDSN(t, dsn, viaSentinel), apptest.NewWithDSN(t, dsn, viaSentinel)
			a.Do(t, "PUT", "/v1/counters/live%2Ffailover", `{"value": 0}`)
			stream := apptest.OpenStream(t, b.URL+"/v1/counters/live%2Ffailover/events")
			stream.Next(t, 5*time.Second)
			var seen []int64
			next := int64(0)
			step := func(when string) {
				next++
				if r := a.Do(t, "POST", "/v1/counters/live%2Ffailover/increment", ""); r.Status != 200 {
					t.Fatalf("%s: increment %d: %d %s", when, next, r.Status, r.Body)
				}
				start := time.Now()
				seen = append(seen, stream.Until(t, next, 5*time.Second)...)
				t.Logf("%s: value %d after %v", when, next, time.Since(start).Round(time.Millisecond))
			}
			step("before")
			tc.fault(t, s)
			for range 3 {
				step("after the failover")
			}
			time.Sleep(4 * time.Second) // the probe has found the silent subscription by now
			step("later")
			if n := resubscriptions(t, b); n < 2 {
				t.Errorf("%v subscriptions on the watching process, want a new one after the failover", n)
			}
			for i := 1; i < len(seen); i++ {
				if seen[i] < seen[i-1] {
					t.Fatalf("values went back: %v", seen)
				}
			}
		})
	}
}

// resubscriptions is counters_live_resubscriptions_total of one process.
func resubscriptions(t *testing.T, e *apptest.Env) float64 {
	t.Helper()
	families, err := e.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "counters_live_resubscriptions_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}
