// Package storage keeps the service's data in MySQL (or MariaDB). It is the
// only package that knows SQL.
package storage

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/countersvc/countersvc/counters"
)

// Options tune the connection pool.
type Options struct {
	MaxOpenConns int           // default 32
	ConnectWait  time.Duration // how long Open waits for MySQL to answer; default 30s
	Log          *slog.Logger  // receives the driver's own messages; default: discarded
}

// driverLog routes go-sql-driver's messages (dropped connections and the
// like) into the service's structured log instead of bare stderr.
type driverLog struct{ log *slog.Logger }

func (d driverLog) Print(v ...any) { d.log.Warn("mysql driver", "message", fmt.Sprint(v...)) }

// sqlMode makes MySQL refuse instead of silently clamping or truncating: an
// out-of-range value or a NULL in a NOT NULL column is an error, which the
// counter statements rely on.
const sqlMode = "'STRICT_ALL_TABLES,NO_ENGINE_SUBSTITUTION'"

// processLog is where the driver's process-wide logger (the one every
// configuration made without a logger of its own gets) sends its
// messages: the log of the last pool Connect opened, or until then
// stderr, as the driver's own default. The driver's global is set once,
// here, before any goroutine can read it (mysql.ParseDSN reads it, and
// sql.Open through it); Connect only swaps the logger behind it. Setting
// the global on every Connect raced with pools opened side by side in one
// process (tests of services starting at once, storage's tests in
// parallel), whatever lock storage held, since readers outside storage
// (testenv's own pools) take none of storage's locks.
var processLog atomic.Pointer[slog.Logger]

type processDriverLog struct{ stderr mysql.Logger }

func (d processDriverLog) Print(v ...any) {
	if l := processLog.Load(); l != nil {
		driverLog{l}.Print(v...)
		return
	}
	d.stderr.Print(v...)
}

func init() {
	mysql.SetLogger(processDriverLog{stderr: log.New(os.Stderr, "[mysql] ", log.Ldate|log.Ltime)})
}

// ParseDSN parses dsn and sets the session options the storage code relies on.
func ParseDSN(dsn string) (*mysql.Config, error) {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("invalid MySQL DSN: %w", err)
	}
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	// Resets count the rows they matched, not only the rows they changed.
	cfg.ClientFoundRows = true
	// One round trip per ad-hoc query instead of prepare+execute; the hot
	// statements are prepared once and use the binary protocol anyway.
	cfg.InterpolateParams = true
	// IncrementMany sends a whole transaction in one round trip. Safe here:
	// every argument is escaped by the driver's interpolation, never pasted.
	cfg.MultiStatements = true
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["time_zone"] = "'+00:00'"
	cfg.Params["sql_mode"] = sqlMode
	return cfg, nil
}

// Defaults of Options.
const (
	DefaultMaxOpenConns = 32
	DefaultConnectWait  = 30 * time.Second
)

// Open connects to MySQL, creates the database named in the DSN when it is
// missing, and applies the migrations. It waits up to o.ConnectWait for MySQL
// to come up, and for another process's migrations to finish.
func Open(ctx context.Context, dsn string, o Options) (*DB, error) {
	if o.ConnectWait <= 0 {
		o.ConnectWait = DefaultConnectWait
	}
	ctx, cancel := context.WithTimeout(ctx, o.ConnectWait)
	defer cancel()
	db, err := Connect(ctx, dsn, o)
	if err != nil {
		return nil, err
	}
	if err := migrateUp(ctx, db.DB, migrationFiles, o.Log); err != nil {
		db.Close()
		return nil, err
	}
	if db.returning, err = probeReturning(ctx, db.DB); err != nil {
		db.Close()
		return nil, fmt.Errorf("probing INSERT ... RETURNING: %w", err)
	}
	return db, nil
}

// Connect is Open without the migrations, for the migrate command, which
// must reach a database that Open refuses (a failed migration). Its DB is
// for migrating only: the stores need Open's.
func Connect(ctx context.Context, dsn string, o Options) (*DB, error) {
	cfg, err := ParseDSN(dsn)
	if err != nil {
		return nil, err
	}
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = DefaultMaxOpenConns
	}
	// The driver logs through the connector's own logger, fixed when its
	// config is made: set it there, not (only) globally.
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = driverLog{o.Log}
	processLog.Store(o.Log)
	if o.ConnectWait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.ConnectWait)
		defer cancel()
	}

	galera, err := waitForServer(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if galera {
		causalReads(cfg, o.Log)
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(endedConnector{connector})
	db.SetMaxOpenConns(o.MaxOpenConns)
	db.SetMaxIdleConns(o.MaxOpenConns)
	db.SetConnMaxLifetime(5 * time.Minute)
	db.SetConnMaxIdleTime(time.Minute)
	return &DB{DB: db, galera: galera}, nil
}

// DB is the pool that the stores share, with what Open learned of the
// server.
type DB struct {
	*sql.DB
	// returning: INSERT ... RETURNING hands back rows, which lets a write of
	// many rows read its new values in the same statement.
	returning bool
	galera    bool // the server is a node of a Galera cluster
}

// Check reports whether MySQL serves requests, for /readyz. A server that
// is not a Galera node only has to answer a ping. A Galera node must be
// Synced in the cluster's Primary component (wsrep_local_state_comment,
// wsrep_cluster_status, and wsrep_ready): a node cut off from the others
// still answers a ping and SELECT 1 but refuses every statement that
// touches a table (1047, measured on MariaDB 10.11); a Joiner, Joined or
// Donor/Desynced node lags the cluster, and a donor of a full state
// transfer blocks writes. Such a node is not ready until it is Synced
// again, which Galera reaches by itself (the check asks every time, and
// remembers nothing). Its error is then a *counters.Error whose message
// says the node's state, which /readyz shows; any other error is MySQL not
// answering. One SHOW STATUS of three variables: no table is read, no
// wsrep_sync_wait applies (it covers no SHOW at the value the service sets),
// and it runs only when /readyz is asked, under its deadline.
func (db *DB) Check(ctx context.Context) error {
	if !db.galera {
		return db.PingContext(ctx)
	}
	rows, err := db.QueryContext(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN "+
		"('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state_comment')")
	if err != nil {
		return err
	}
	defer rows.Close()
	status := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return err
		}
		status[strings.ToLower(name)] = value
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return galeraReady(status["wsrep_local_state_comment"], status["wsrep_cluster_status"], status["wsrep_ready"])
}

// galeraReady is nil for a node that is Synced in a Primary component and
// ready, and otherwise an error that says what it is.
func galeraReady(state, cluster, ready string) error {
	if state == "Synced" && cluster == "Primary" && ready == "ON" {
		return nil
	}
	return counters.Errorf(counters.EUNAVAILABLE,
		"The Galera node is not Synced in the Primary component: its state is %s, its component %s, wsrep_ready %s.",
		cmp.Or(state, "unknown"), cmp.Or(cluster, "unknown"), cmp.Or(ready, "unknown"))
}

// waitForServer pings MySQL until it answers, creates the database when the
// server says it does not exist, and reports whether the server is a node
// of a Galera cluster (wsrep_on).
func waitForServer(ctx context.Context, cfg *mysql.Config) (galera bool, err error) {
	server := cfg.Clone()
	server.DBName = ""
	connector, err := mysql.NewConnector(server)
	if err != nil {
		return false, err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	for {
		err = db.PingContext(ctx)
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("MySQL at %s did not answer: %w", cfg.Addr, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
	if cfg.DBName == "" {
		return false, errors.New("the MySQL DSN names no database")
	}
	_, err = db.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+quoteIdent(cfg.DBName))
	if err != nil {
		return false, fmt.Errorf("creating database %s: %w", cfg.DBName, err)
	}
	return isGalera(ctx, db)
}

// isGalera reports whether the server is a node of a Galera cluster.
func isGalera(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (bool, error) {
	// MySQL has no such variable: no row, not an error.
	var name, on string
	err := db.QueryRowContext(ctx, "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'").Scan(&name, &on)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("asking whether MySQL is a Galera node: %w", err)
	}
	return on == "ON", nil
}

// galeraSyncWait is the wsrep_sync_wait the service sets on a Galera node:
// before each SELECT (1) and each UPDATE and DELETE (2) the node waits until
// it has applied every transaction the cluster committed before the
// statement began. Without it a node answers from its own copy, which may
// lag the node that acknowledged a change: measured with one service per
// node of three, 4.5% of reads of a hot counter went back (11% with a
// shared Redis, which then served the old value to every process), and a
// DELETE or reset on one node missed a counter just created on another. A
// DELETE or UPDATE that finds nothing writes nothing, so Galera's
// certification cannot catch it; INSERTs (4) need no wait, because an
// insert or upsert that conflicts with a change this node has not applied
// yet fails certification and is retried (see retry).
const galeraSyncWait = "3"

// causalReads sets galeraSyncWait for every connection, unless the DSN
// chose a wsrep_sync_wait of its own, and logs which one is in force.
func causalReads(cfg *mysql.Config, log *slog.Logger) {
	if v, set := cfg.Params["wsrep_sync_wait"]; set {
		log.Info("mysql is a galera node; wsrep_sync_wait as the DSN says", "wsrep_sync_wait", v)
		return
	}
	cfg.Params["wsrep_sync_wait"] = galeraSyncWait
	log.Info("mysql is a galera node; reads, updates and deletes wait for the cluster's earlier commits", "wsrep_sync_wait", galeraSyncWait)
}

func quoteIdent(s string) string {
	out := []byte{'`'}
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			out = append(out, '`')
		}
		out = append(out, s[i])
	}
	return string(append(out, '`'))
}
