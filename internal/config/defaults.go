package config

import (
	"time"

	"countersvc/app"
	"countersvc/cache"
	"countersvc/coalesce"
	"countersvc/counters"
	"countersvc/hits"
	"countersvc/live"
	"countersvc/storage"
	"countersvc/visitors"
	"countersvc/webhooks"
)

// Defaults is the configuration of an empty environment: what the service
// runs with when nothing is set. Load starts from it, and so do tests. Each
// default is the package's own where a package has one, so that no value
// is written twice; the rest are settings of the whole service. The table in
// docs/configuration.md is held to it (TestTheGuideListsEveryVariableWithItsDefault).
func Defaults() Config {
	return Config{
		Addr:            ":8080",
		MySQLDSN:        "counters:counters@tcp(127.0.0.1:33306)/counters", // the MariaDB scripts/run starts
		MySQLMaxConns:   storage.DefaultMaxOpenConns,
		MySQLTimeout:    app.DefaultDBTimeout,
		MySQLWaitAtBoot: storage.DefaultConnectWait,
		Coalesce:        true,
		CoalesceRound:   coalesce.DefaultMaxRound,
		CoalesceFlight:  coalesce.DefaultMaxInFlight,
		History:         true,
		RedisTimeout:    cache.DefaultTimeout,
		CacheLease:      cache.DefaultLease,
		CacheClockSkew:  cache.DefaultClockSkew,
		ListTTL:         counters.DefaultListTTL,
		BodyLimit:       app.DefaultBodyLimit,
		ReadTimeout:     app.DefaultReadTimeout,
		WriteTimeout:    app.DefaultWriteTimeout,
		IdleTimeout:     app.DefaultIdleTimeout,
		ShutdownDrain:   5 * time.Second,
		ShutdownTimeout: 10 * time.Second,
		LogLevel:        "info",
		LogFormat:       "json",

		PublicPrefixes:  []string{hits.DefaultPublicPrefix},
		HitsRateLimit:   60,
		HitsRateWindow:  time.Minute,
		HitsDedupWindow: 30 * time.Second,
		ImageProxies:    []string{"github-camo"},
		ImageProxyRate:  600,
		Visitors:        true,
		VisitorsFlush:   visitors.DefaultFlush,

		LiveMaxPerAddr: live.DefaultMaxPerAddr,
		LiveMaxStreams: live.DefaultMaxStreams,
		LiveCheckEvery: live.DefaultCheckEvery,
		LiveHeartbeat:  app.DefaultHeartbeat,

		WebhookMaxPerKey: webhooks.DefaultMaxPerKey,
		WebhookWorkers:   webhooks.DefaultWorkers,
	}
}
