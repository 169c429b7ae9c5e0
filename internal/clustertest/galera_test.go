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

// One service per node of a three-node Galera cluster, every node a
// writer: under one hot counter, 1,000 counters and tickets, no request
// fails, no increment is lost or doubled and no read is stale, with no
// cache and with one Redis shared by the three.
func TestGaleraOneServicePerNodeFailsNothingLosesNothingReadsNothingStale(t *testing.T) {
	testenv.NeedCluster(t)
	g := testenv.StartGalera(t)
	redis := testenv.StartRedis(t)

	t.Run("reads wait for the cluster unless the DSN says otherwise", func(t *testing.T) {
		for _, tc := range []struct{ params, want string }{
			{"", "3"},
			{"?wsrep_sync_wait=0", "0"},
			{"?wsrep_sync_wait=15", "15"},
		} {
			env := apptest.NewWithDSN(t, g.Nodes[1].DSN(fmt.Sprintf("sync_wait_%d", time.Now().UnixNano()))+tc.params)
			var got string
			if err := env.DB.QueryRow("SELECT @@session.wsrep_sync_wait").Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("DSN parameters %q: wsrep_sync_wait %s, want %s", tc.params, got, tc.want)
			}
		}
	})

	const workers, d = 24, 8 * time.Second
	hot := func(*rand.Rand) string { return "hot" }
	uniform := func(r *rand.Rand) string { return fmt.Sprintf("c/%d", r.IntN(1000)) }
	for _, tc := range []struct {
		name     string
		redisURL string
	}{
		{"without cache", ""},
		{"with one Redis for all", redis.URL()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			procs := onePerNode(t, g, tc.redisURL)
			t.Run("one hot counter", func(t *testing.T) {
				l := newLoad(procs)
				l.run(workers, d, hot)
				l.check(t, d)
			})
			t.Run("1,000 counters", func(t *testing.T) {
				l := newLoad(procs)
				l.run(workers, d, uniform)
				l.check(t, d)
			})
			t.Run("tickets", func(t *testing.T) { ticketLoad(t, procs, workers, d) })
		})
	}
}

// onePerNode starts a service on each node, on a fresh database, one after
// another so that the first creates the tables.
func onePerNode(t *testing.T, g *testenv.Galera, redisURL string) []*apptest.Env {
	t.Helper()
	name := fmt.Sprintf("counters_%d", time.Now().UnixNano())
	var procs []*apptest.Env
	for _, n := range g.Nodes {
		opt := func(c *config.Config) { c.RedisURL = redisURL }
		procs = append(procs, apptest.NewWithDSN(t, n.DSN(name), opt))
	}
	return procs
}
