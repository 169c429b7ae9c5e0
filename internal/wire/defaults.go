package wire

import (
	"time"

	"github.com/countersvc/countersvc/app"
	"github.com/countersvc/countersvc/cache"
	"github.com/countersvc/countersvc/coalesce"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/storage"
)

// Defaults is the configuration of an empty environment: what the service
// runs with when nothing is set. Load starts from it, and so do tests. Each
// default is the package's own where a package has one, so that no value
// is written twice; the rest are settings of the whole service. The core's
// blocks are here; each capability's is beside its build (capabilities). The table in
// docs/configuration.md is held to it (TestTheGuideListsEveryVariableWithItsDefault).
func Defaults() Config {
	c := Config{
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
		Log: Log{Level: "info", Format: "json"},
	}
	for _, cap := range capabilities {
		if cap.defaults != nil {
			cap.defaults(&c)
		}
	}
	return c
}
