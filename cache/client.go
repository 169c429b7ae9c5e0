package cache

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// NewClient connects to the Redis that rawURL names (COUNTERS_REDIS_URL):
//
//	redis://[user:password@]host:port/db          one server (rediss:// for TLS,
//	unix:///path/redis.sock?db=N                    or a Unix socket)
//	redis://host1:port1?addr=host2:port2&addr=...  a Redis Cluster, by two or more
//	                                               seed nodes (db must be 0)
//	redis-sentinel://[user:password@]sentinel1:26379/db?master_name=NAME&addr=sentinel2:26379
//	                                               the primary that Sentinel names
//
// go-redis options may be added as query parameters (pool_size=50,
// min_idle_conns=4, dial_timeout=1s, ...). timeout becomes the dial, read,
// write and pool-wait timeout of every call unless the URL sets one, and
// failed commands are not retried: the cache has its own fallback, and a
// retried timeout would cost a multiple of it.
func NewClient(rawURL string, timeout time.Duration) (redis.UniversalClient, error) {
	c, err := newClient(rawURL, timeout)
	if err != nil {
		return nil, fmt.Errorf("COUNTERS_REDIS_URL: %w", err)
	}
	return c, nil
}

func newClient(rawURL string, timeout time.Duration) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	noMaint := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	switch {
	case u.Scheme == "redis-sentinel":
		su := *u
		su.Scheme = "redis"
		o, err := redis.ParseFailoverURL(su.String())
		if err != nil {
			return nil, err
		}
		if o.MasterName == "" {
			return nil, errors.New("redis-sentinel:// needs ?master_name=")
		}
		if o.ReplicaOnly || o.RouteByLatency || o.RouteRandomly {
			return nil, errReplicaReads
		}
		tune(knobs{&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout, &o.MaxRetries, &o.DialerRetries, &o.Protocol, &o.ContextTimeoutEnabled, &o.DisableIdentity}, timeout)
		return redis.NewFailoverClient(o), nil
	case u.Query().Has("addr"):
		o, err := redis.ParseClusterURL(rawURL)
		if err != nil {
			return nil, err
		}
		if o.ReadOnly || o.RouteByLatency || o.RouteRandomly {
			return nil, errReplicaReads
		}
		tune(knobs{&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout, &o.MaxRetries, &o.DialerRetries, &o.Protocol, &o.ContextTimeoutEnabled, &o.DisableIdentity}, timeout)
		o.MaintNotificationsConfig = noMaint
		return redis.NewClusterClient(o), nil
	}
	o, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	tune(knobs{&o.DialTimeout, &o.ReadTimeout, &o.WriteTimeout, &o.PoolTimeout, &o.MaxRetries, &o.DialerRetries, &o.Protocol, &o.ContextTimeoutEnabled, &o.DisableIdentity}, timeout)
	o.MaintNotificationsConfig = noMaint
	return redis.NewClient(o), nil
}

// errReplicaReads refuses options that read from replicas: replication is
// asynchronous, so a replica may still hold an entry that the primary has
// already invalidated, and reads would go back in time.
var errReplicaReads = errors.New("reading from replicas (read_only, replica_only, route_by_latency, route_randomly) would serve invalidated entries")

// knobs are the options that the three go-redis option types share and
// that the cache sets.
type knobs struct {
	dial, read, write, pool  *time.Duration
	retries, dialRetries     *int
	protocol                 *int
	ctxTimeout, skipIdentity *bool
}

func tune(k knobs, timeout time.Duration) {
	for _, d := range []*time.Duration{k.dial, k.read, k.write, k.pool} {
		if *d == 0 {
			*d = timeout
		}
	}
	if *k.retries == 0 {
		*k.retries = -1 // go-redis: -1 disables retries, 0 means 3
	}
	if *k.dialRetries == 0 {
		*k.dialRetries = 1 // the circuit breaker retries
	}
	if *k.protocol == 0 {
		*k.protocol = 2 // RESP2: no HELLO round trip on each new connection
	}
	*k.ctxTimeout = true   // each call's context deadline bounds it
	*k.skipIdentity = true // no CLIENT SETINFO on each new connection
}
