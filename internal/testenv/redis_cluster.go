package testenv

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// RedisCluster is a private Redis Cluster of three primaries, without
// replicas or persistence, stopped when the test ends.
type RedisCluster struct {
	Nodes []*Redis
}

// StartRedisCluster starts three cluster-enabled servers, joins them with
// redis-cli and waits until every node reports the cluster ok.
func StartRedisCluster(tb testing.TB) *RedisCluster {
	tb.Helper()
	skipShort(tb)
	cli, err := binary("redis-cli")
	if err != nil {
		tb.Fatal(err)
	}
	c := &RedisCluster{}
	create := []string{"--cluster", "create"}
	for range 3 {
		r := &Redis{Port: FreePort(tb), extra: []string{
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"}}
		r.Start(tb)
		tb.Cleanup(r.Kill)
		c.Nodes = append(c.Nodes, r)
		create = append(create, r.Addr())
	}
	create = append(create, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, create...).CombinedOutput(); err != nil {
		tb.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, r := range c.Nodes {
		if !waitFor(20*time.Second, func() bool {
			out, err := exec.Command(cli, "-p", r.portString(), "cluster", "info").Output()
			return err == nil && strings.Contains(string(out), "cluster_state:ok")
		}) {
			tb.Fatalf("the Redis Cluster did not come up on %s", r.Addr())
		}
	}
	return c
}

// URL names the cluster by its seed nodes, as COUNTERS_REDIS_URL does.
func (c *RedisCluster) URL() string {
	u := "redis://" + c.Nodes[0].Addr()
	for i, r := range c.Nodes[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + r.Addr()
	}
	return u
}
