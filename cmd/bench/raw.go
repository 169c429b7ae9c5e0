package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/countersvc/countersvc/storage"
)

// The raw baselines talk to MySQL straight from Go, one statement (or one
// transaction) per increment, with as many connections as clients: what an
// application gets without this service.
const (
	rawIncrement = `INSERT INTO bench_counter (name, value) VALUES (?, CAST(LAST_INSERT_ID(1) AS SIGNED))
		ON DUPLICATE KEY UPDATE value = CAST(LAST_INSERT_ID(value + 1) AS SIGNED)`
	rawSchema = `CREATE TABLE IF NOT EXISTS bench_counter (
		name VARBINARY(255) NOT NULL PRIMARY KEY, value BIGINT NOT NULL) ENGINE=InnoDB`
)

type rawMode int

const (
	rawLastInsertID rawMode = iota // one autocommitted upsert, value from the OK packet
	rawSerializable                // SERIALIZABLE transaction: UPDATE, then SELECT the value
)

// openRaw drops the database named in dsn and opens it afresh for a raw
// baseline through storage.Open: the service's own session settings and
// tables. Its settings matter to the comparison: with parameters
// interpolated by the driver, a raw statement is one round trip, as the
// service's are; without, each would be prepared, executed and closed.
func openRaw(ctx context.Context, dsn string, conns int) (*sql.DB, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if !strings.Contains(cfg.DBName, "bench") {
		return nil, fmt.Errorf("-dsn names database %q; the raw baselines drop and recreate it, so its name must contain \"bench\"", cfg.DBName)
	}
	server := cfg.Clone()
	server.DBName = ""
	connector, err := mysql.NewConnector(server)
	if err != nil {
		return nil, err
	}
	admin := sql.OpenDB(connector)
	_, err = admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+cfg.DBName+"`")
	admin.Close()
	if err != nil {
		return nil, err
	}
	db, err := storage.Open(ctx, dsn, storage.Options{MaxOpenConns: conns})
	if err != nil {
		return nil, err
	}
	return db.DB, nil
}

// rawRun increments counters (one name if counters == 1) from conns
// goroutines for d and reports the rate and latency.
func rawRun(db *sql.DB, mode rawMode, conns, counters int, d time.Duration) (load, error) {
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	// A deadline for the whole run, so that a MySQL that stops answering
	// fails the benchmark instead of hanging it.
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Minute)
	defer cancel()
	if _, err := db.ExecContext(ctx, rawSchema); err != nil {
		return load{}, err
	}
	var count, bad atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := range conns {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			var mine []time.Duration
			for time.Now().Before(stop) {
				name := "raw/hot"
				if counters > 1 {
					name = fmt.Sprintf("raw/u%d", rng.IntN(counters))
				}
				start := time.Now()
				var err error
				if mode == rawLastInsertID {
					err = rawIncrementOnce(ctx, db, name)
				} else {
					err = rawSerializableOnce(ctx, db, name)
				}
				mine = append(mine, time.Since(start))
				if err != nil {
					bad.Add(1)
				} else {
					count.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}(uint64(g))
	}
	start := time.Now()
	wg.Wait()
	elapsed := time.Since(start)
	l := load{RPS: float64(count.Load()) / elapsed.Seconds(), Requests: count.Load(), Bad: bad.Load()}
	if len(lat) > 0 {
		self := func(d time.Duration) time.Duration { return d }
		l.P50, l.P99 = percentile(lat, 50, self), percentile(lat, 99, self)
	}
	return l, nil
}

func rawIncrementOnce(ctx context.Context, db *sql.DB, name string) error {
	res, err := db.ExecContext(ctx, rawIncrement, name)
	if err != nil {
		return err
	}
	_, err = res.LastInsertId()
	return err
}

// rawSerializableOnce is the older read-after-update technique.
func rawSerializableOnce(ctx context.Context, db *sql.DB, name string) error {
	for range 10 {
		tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable})
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO bench_counter (name, value) VALUES (?, 1) ON DUPLICATE KEY UPDATE value = value + 1", name)
		if err == nil {
			var v int64
			err = tx.QueryRowContext(ctx, "SELECT value FROM bench_counter WHERE name = ?", name).Scan(&v)
		}
		if err == nil {
			if err = tx.Commit(); err == nil {
				return nil
			}
		}
		tx.Rollback()
		if !isDeadlock(err) {
			return err
		}
	}
	return fmt.Errorf("gave up after deadlocks")
}

// isDeadlock reports a deadlock (1213) or a lock wait timeout (1205): the
// transaction was rolled back and may be retried.
func isDeadlock(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205)
}
