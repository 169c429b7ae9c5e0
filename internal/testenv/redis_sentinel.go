package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the name under which Sentinel knows the primary.
const SentinelMaster = "countersvc"

// Sentinel is a private Redis primary with one replica, watched by three
// Sentinels (quorum two) that fail over one second after the primary stops
// answering. Everything is stopped when the test ends.
type Sentinel struct {
	Servers   []*Redis // the first primary, then its replica
	Sentinels []*Redis
}

// StartSentinel starts the servers and the Sentinels and waits until every
// Sentinel knows the replica and the other Sentinels, so that a failover
// can be asked for at once.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	skipShort(tb)
	s := &Sentinel{}
	primary := StartRedis(tb)
	replica := &Redis{Port: FreePort(tb), extra: []string{"--replicaof", "127.0.0.1", primary.portString()}}
	replica.Start(tb)
	tb.Cleanup(replica.Kill)
	s.Servers = []*Redis{primary, replica}
	for range 3 {
		conf := filepath.Join(tb.TempDir(), "sentinel.conf")
		body := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 2\n"+
			"sentinel down-after-milliseconds %[1]s 1000\n"+
			"sentinel failover-timeout %[1]s 10000\n", SentinelMaster, primary.Port)
		if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
		sn := &Redis{Port: FreePort(tb), conf: conf, extra: []string{"--sentinel"}}
		sn.Start(tb)
		tb.Cleanup(sn.Kill)
		s.Sentinels = append(s.Sentinels, sn)
	}
	for _, sn := range s.Sentinels {
		c := s.client(tb, sn)
		if !waitFor(30*time.Second, func() bool {
			m, err := c.Master(context.Background(), SentinelMaster).Result()
			return err == nil && m["num-slaves"] == "1" && m["num-other-sentinels"] == "2"
		}) {
			tb.Fatalf("Sentinel %s did not find the replica and the other Sentinels", sn.Addr())
		}
	}
	return s
}

func (s *Sentinel) client(tb testing.TB, sn *Redis) *redis.SentinelClient {
	c := redis.NewSentinelClient(&redis.Options{Addr: sn.Addr()})
	tb.Cleanup(func() { c.Close() })
	return c
}

// URL names the Sentinels, as COUNTERS_REDIS_URL does.
func (s *Sentinel) URL() string {
	u := fmt.Sprintf("redis-sentinel://%s/0?master_name=%s", s.Sentinels[0].Addr(), SentinelMaster)
	for _, sn := range s.Sentinels[1:] {
		u += "&addr=" + sn.Addr()
	}
	return u
}

// Primary is the server the Sentinels name as the primary now.
func (s *Sentinel) Primary(tb testing.TB) *Redis {
	tb.Helper()
	addr, err := s.client(tb, s.Sentinels[0]).GetMasterAddrByName(context.Background(), SentinelMaster).Result()
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range s.Servers {
		if r.Addr() == addr[0]+":"+addr[1] {
			return r
		}
	}
	tb.Fatalf("Sentinel names %v, which is none of the servers", addr)
	return nil
}

// Failover asks Sentinel for a planned failover (SENTINEL FAILOVER) and
// waits until every Sentinel names the new primary.
func (s *Sentinel) Failover(tb testing.TB) {
	tb.Helper()
	old := s.Primary(tb)
	if err := s.client(tb, s.Sentinels[0]).Failover(context.Background(), SentinelMaster).Err(); err != nil {
		tb.Fatal(err)
	}
	s.WaitForPrimaryOtherThan(tb, old)
}

// WaitForPrimaryOtherThan waits until every Sentinel names a primary other
// than old and that primary answers as one.
func (s *Sentinel) WaitForPrimaryOtherThan(tb testing.TB, old *Redis) {
	tb.Helper()
	for _, sn := range s.Sentinels {
		c := s.client(tb, sn)
		if !waitFor(60*time.Second, func() bool {
			addr, err := c.GetMasterAddrByName(context.Background(), SentinelMaster).Result()
			return err == nil && addr[0]+":"+addr[1] != old.Addr()
		}) {
			tb.Fatalf("Sentinel %s still names %s as the primary after a minute", sn.Addr(), old.Addr())
		}
	}
	primary := s.Primary(tb)
	rdb := redis.NewClient(&redis.Options{Addr: primary.Addr()})
	defer rdb.Close()
	if !waitFor(30*time.Second, func() bool {
		role, err := rdb.Do(context.Background(), "ROLE").Slice()
		return err == nil && len(role) > 0 && role[0] == "master"
	}) {
		tb.Fatalf("%s, named the primary, does not answer as one", primary.Addr())
	}
}
