package clustertest_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/apptest"
	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/internal/wire"
	"github.com/countersvc/countersvc/storage"
)

// One service per node of a three-node Galera cluster, every node a
// writer: under one hot counter, 1,000 counters and tickets, no request
// fails, no increment is lost or doubled and no read is stale, with no
// cache and with one Redis shared by the three.
func TestGaleraOneServicePerNodeFailsNothingLosesNothingReadsNothingStale(t *testing.T) {
	testenv.NeedCluster(t)
	g := testenv.StartGalera(t)

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

	// GET_LOCK holds on one node only; the migration lock is a row, which
	// the whole cluster agrees on: of services starting at once on every
	// node, one migrates and the others wait for it.
	t.Run("services starting at once on every node migrate one database", func(t *testing.T) {
		for round := range 5 {
			name := fmt.Sprintf("migrate_%d_%d", round, time.Now().UnixNano())
			first, err := sql.Open("mysql", g.Nodes[0].DSN(""))
			if err != nil {
				t.Fatal(err)
			}
			_, err = first.Exec("CREATE DATABASE " + name)
			first.Close()
			if err != nil {
				t.Fatal(err)
			}
			// storage.Open migrates, on a pool per node.
			errs := make(chan error, len(g.Nodes))
			for _, n := range g.Nodes {
				go func() {
					db, err := storage.Open(context.Background(), n.DSN(name), storage.Options{})
					if err == nil {
						db.Close()
					}
					errs <- err
				}()
			}
			for range g.Nodes {
				if err := <-errs; err != nil {
					t.Errorf("round %d: %v", round, err)
				}
			}
		}
	})

	threeServicesUnderLoad(t, func(i int, name string) string { return g.Nodes[i].DSN(name) })
	t.Run("webhooks: one event per crossing, delivered once", func(t *testing.T) {
		oneEventPerCrossing(t, func(i int, name string) string { return g.Nodes[i].DSN(name) })
	})

	// Last: it breaks the cluster.
	t.Run("a service whose node is cut off is not ready and changes nothing", func(t *testing.T) {
		env := apptest.NewWithDSN(t, g.Nodes[0].DSN(fmt.Sprintf("cut_off_%d", time.Now().UnixNano())))
		if r := env.Do(t, "POST", "/v1/counters/c/increment", ""); r.Status != 200 {
			t.Fatalf("increment before: %d %s", r.Status, r.Body)
		}
		g.Nodes[1].Kill()
		g.Nodes[2].Kill()
		deadline := time.Now().Add(time.Minute)
		for env.Do(t, "GET", "/readyz", "").Status != 503 {
			if time.Now().After(deadline) {
				t.Fatal("/readyz still 200 a minute after the node lost the rest of its cluster")
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, tc := range []struct{ method, path, body string }{
			{"POST", "/v1/counters/c/increment", ""},
			{"PUT", "/v1/counters/c", `{"value": 5}`},
			{"DELETE", "/v1/counters/c", ""},
			{"GET", "/v1/counters/c", ""},
		} {
			r := env.Do(t, tc.method, tc.path, tc.body)
			if r.Status != 503 || !strings.Contains(string(r.Body), "nothing was changed") {
				t.Errorf("%s %s on a node cut off: %d %s, want 503 saying nothing was changed", tc.method, tc.path, r.Status, r.Body)
			}
		}
	})
}

// The same three services and load on one MariaDB, the single writer: the
// figures to compare with Galera's.
func TestThreeServicesOnOneMariaDBFailNothingLoseNothingReadNothingStale(t *testing.T) {
	testenv.NeedCluster(t)
	m := testenv.StartMariaDB(t)
	threeServicesUnderLoad(t, func(_ int, name string) string { return m.DSN(name) })
}

// threeServicesUnderLoad starts three services, the ith on the database
// name of dsn(i, name), without cache and then with one Redis for all, and
// runs a hot counter, 1,000 counters and tickets through them.
func threeServicesUnderLoad(t *testing.T, dsn func(i int, name string) string) {
	redis := testenv.StartRedis(t)
	const workers, d = 24, 8 * time.Second
	for _, tc := range []struct {
		name     string
		redisURL string
	}{
		{"without cache", ""},
		{"with one Redis for all", redis.URL()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			procs := threeServices(t, dsn, tc.redisURL)
			t.Run("one hot counter", func(t *testing.T) {
				l := newLoad(procs)
				l.run(workers, d, hot)
				l.check(t, d)
			})
			t.Run("1,000 counters", func(t *testing.T) {
				l := newLoad(procs)
				l.run(workers, d, thousand)
				l.check(t, d)
			})
			t.Run("tickets", func(t *testing.T) { ticketLoad(t, procs, workers, d) })
		})
	}
}

// hot picks the one hot counter, and thousand one of 1,000 counters, for
// load.run.
func hot(*rand.Rand) string { return "hot" }

func thousand(r *rand.Rand) string { return fmt.Sprintf("c/%d", r.IntN(1000)) }

// threeServices starts three services on a fresh database, one after
// another so that the first creates the tables. Redis is healthy here: a
// generous deadline for its calls keeps a loaded machine from looking like
// a Redis fault, whose window for stale reads across processes is the
// cache's own (see the Sentinel test), not the database's.
func threeServices(t *testing.T, dsn func(i int, name string) string, redisURL string, opts ...apptest.Option) []*apptest.Env {
	t.Helper()
	name := fmt.Sprintf("counters_%d", time.Now().UnixNano())
	var procs []*apptest.Env
	for i := range 3 {
		opt := func(c *wire.Config) { c.Cache.RedisURL, c.Cache.Timeout = redisURL, time.Second }
		procs = append(procs, apptest.NewWithDSN(t, dsn(i, name), append([]apptest.Option{opt}, opts...)...))
	}
	return procs
}
