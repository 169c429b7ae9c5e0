package config

import (
	"time"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/coalesce"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/hits"
	"github.com/countersvc/countersvc/live"
	"github.com/countersvc/countersvc/storage"
	"github.com/countersvc/countersvc/visitors"
	"github.com/countersvc/countersvc/webhooks"
)

// Defaults is the configuration of an empty environment: what the service
// runs with when nothing is set. Load starts from it, and so do tests. Each
// default is the package's own where a package has one, so that no value
// is written twice; the rest are settings of the whole service. The table in
// docs/configuration.md is held to it (TestTheGuideListsEveryVariableWithItsDefault).
func Defaults() Config {
	return Config{
		HTTP: HTTP{
			Addr:            ":8080",
			BodyLimit:       app.DefaultBodyLimit,
			ReadTimeout:     app.DefaultReadTimeout,
			WriteTimeout:    app.DefaultWriteTimeout,
			IdleTimeout:     app.DefaultIdleTimeout,
			ShutdownDrain:   5 * time.Second,
			ShutdownTimeout: 10 * time.Second,
		},
		MySQL: MySQL{
			DSN:          "counters:counters@tcp(127.0.0.1:33306)/counters", // the MariaDB scripts/run starts
			MaxOpenConns: storage.DefaultMaxOpenConns,
			Timeout:      app.DefaultDBTimeout,
			ConnectWait:  storage.DefaultConnectWait,
			History:      true,
		},
		Cache: Cache{
			Timeout:   cache.DefaultTimeout,
			Lease:     cache.DefaultLease,
			ClockSkew: cache.DefaultClockSkew,
			ListTTL:   counters.DefaultListTTL,
		},
		Coalesce: Coalesce{
			On:          true,
			MaxRound:    coalesce.DefaultMaxRound,
			MaxInFlight: coalesce.DefaultMaxInFlight,
		},
		Live: Live{
			MaxPerAddr: live.DefaultMaxPerAddr,
			MaxStreams: live.DefaultMaxStreams,
			CheckEvery: live.DefaultCheckEvery,
			Heartbeat:  app.DefaultHeartbeat,
		},
		Hits: Hits{
			PublicPrefixes: []string{hits.DefaultPublicPrefix},
			ImageProxies:   []string{"github-camo"},
			Limits: HitLimits{
				Rate:        60,
				RateWindow:  time.Minute,
				DedupWindow: 30 * time.Second,
				ProxyRate:   600,
			},
			Visitors:      true,
			VisitorsFlush: visitors.DefaultFlush,
		},
		Webhooks: Webhooks{
			MaxPerKey: webhooks.DefaultMaxPerKey,
			Workers:   webhooks.DefaultWorkers,
		},
		Log: Log{Level: "info", Format: "json"},
	}
}
