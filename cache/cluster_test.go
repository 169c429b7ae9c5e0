package cache_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/metrictest"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/internal/testenv"
)

// The cache on a real Redis Cluster. Its keys fall in different slots, on
// different nodes, so everything that touches several at once (the writes of
// many counters, a reset's flush) must handle them key by key: no Redis
// error, no unconfirmed invalidation, and every read after a write shows it.
func TestCacheWorksOnARedisCluster(t *testing.T) {
	t.Parallel()
	cl := testenv.StartRedisCluster(t)
	ctx := context.Background()
	store, _ := storetest.OpenStore(t, storetest.MigratedDSN(t))
	// A generous deadline: this test is about keys spread over nodes, and
	// a loaded machine must not turn a slow answer into a Redis error.
	const timeout = 2 * time.Second
	rdb, err := cache.NewClient(cl.URL(), timeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("NewClient(%s) = %T, want a cluster client", cl.URL(), rdb)
	}
	reg := prometheus.NewRegistry()
	c := cache.New(counters.BackendOf(store), rdb, cache.Options{Timeout: timeout, Registerer: reg})
	t.Cleanup(func() { c.Close() })
	svc := counters.NewService(c.Backend())

	const n = 24
	name := func(i int) string { return "cluster/" + strconv.Itoa(i) }
	read := func(i int) int64 {
		t.Helper()
		got, err := svc.Get(ctx, name(i))
		if err != nil {
			t.Fatalf("Get(%s): %v", name(i), err)
		}
		return got.Value
	}
	for i := range n {
		if _, err := svc.Increment(ctx, name(i), 1); err != nil {
			t.Fatal(err)
		}
		read(i)
		read(i) // cached now
	}
	if hits := metrictest.Sum(t, reg, "counters_cache_hits_total"); hits < n {
		t.Fatalf("%v reads served from Redis, want at least %d", hits, n)
	}
	var nodesWithKeys atomic.Int64
	err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		size, err := node.DBSize(ctx).Result()
		if size > 0 {
			nodesWithKeys.Add(1)
		}
		return err
	})
	if err != nil || nodesWithKeys.Load() < 2 {
		t.Fatalf("entries on %d nodes (%v); the test needs keys on several", nodesWithKeys.Load(), err)
	}

	deltas := make([]counters.Increment, n)
	for i := range deltas {
		deltas[i] = counters.Increment{Name: name(i), By: int64(i)}
	}
	if _, err := c.Backend().Store.IncrementMany(ctx, deltas); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got := read(i); got != int64(1+i) {
			t.Fatalf("after a write of many counters, %s = %d, want %d", name(i), got, 1+i)
		}
	}

	if _, err := svc.Reset(ctx, counters.ResetRequest{Prefix: "cluster/", Value: 7}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if got := read(i); got != 7 {
			t.Fatalf("after a reset, %s = %d, want 7", name(i), got)
		}
	}
	if got := metrictest.Sum(t, reg, "counters_cache_errors_total"); got != 0 {
		t.Fatalf("%v Redis errors", got)
	}
	if got := metrictest.Sum(t, reg, "counters_cache_lease_waits_total"); got != 0 {
		t.Fatalf("%v writes waited out the lease: an invalidation was not confirmed", got)
	}
}
