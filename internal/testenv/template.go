package testenv

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A test that needs the service's schema gets it copied from a template
// database that one test binary migrates once: the migrations (fourteen
// files, each ALTER a table rebuild) take about a second and a half a
// database on a loaded 2-core machine, a copy of the empty tables a tenth
// of that, and the app package alone starts over a hundred services.
// MigratedDSN's copy holds what the migrations left: every table as SHOW
// CREATE TABLE gives it, and the rows of the tables they filled (the
// schema version), so that the service's own Migrate at start finds
// nothing to do.
//
// The template lives as long as its test binary: a connection holds a
// named lock on its name, which the server frees when the binary exits,
// however it ends. The next binary to make a template drops those whose
// lock is free, so that a long-lived server (COUNTERS_TEST_MYSQL_DSN)
// does not gather them.

// Migrate migrates the database of db to the service's schema
// (storage.Migrate; testenv cannot import storage, whose tests import it).
type Migrate func(ctx context.Context, db *sql.DB) error

type template struct {
	once   sync.Once
	name   string
	tables []string // CREATE TABLE statements, unqualified
	filled []string // tables whose rows the migrations left
	server *mysql.Config
	hold   *sql.Conn // keeps the named lock, and so the template, alive
	err    error
}

var migrated template

// templatePrefix begins every template's name; the sweep drops only these.
const templatePrefix = "tmpl_"

// MigratedDSN returns the DSN of a new database with the service's schema,
// dropped when the test ends. Every call in one test binary must pass the
// same migrate.
func MigratedDSN(tb testing.TB, migrate Migrate) string {
	tb.Helper()
	skipShort(tb)
	server, err := serverDSN()
	if err != nil {
		tb.Fatal(err)
	}
	migrated.once.Do(func() { migrated.err = migrated.make(server, migrate) })
	if migrated.err != nil {
		tb.Fatalf("migrating the template database: %v", migrated.err)
	}
	dsn := NewDatabase(tb, server)
	if err := migrated.copyTo(dsn); err != nil {
		tb.Fatalf("copying the template database: %v", err)
	}
	return dsn
}

func (t *template) make(server string, migrate Migrate) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg, err := mysql.ParseDSN(server)
	if err != nil {
		return err
	}
	cfg.DBName = ""
	t.server = cfg
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	// The held connection must outlive this function: one pool of its
	// own, never closed, with no limit on how long it idles.
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	if t.hold, err = db.Conn(ctx); err != nil {
		return err
	}
	sweepTemplates(ctx, t.hold)
	t.name = templatePrefix + randomHex(8)
	var got int
	if err := t.hold.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", t.name).Scan(&got); err != nil || got != 1 {
		return fmt.Errorf("locking the template's name: %v (got %d)", err, got)
	}
	if _, err := t.hold.ExecContext(ctx, "CREATE DATABASE `"+t.name+"`"); err != nil {
		return err
	}
	// The migrations need multiStatements, as the service's DSN has it.
	mcfg := cfg.Clone()
	mcfg.DBName, mcfg.MultiStatements, mcfg.ParseTime = t.name, true, true
	mdb, err := sql.Open("mysql", mcfg.FormatDSN())
	if err != nil {
		return err
	}
	defer mdb.Close()
	if err := migrate(ctx, mdb); err != nil {
		return err
	}
	rows, err := mdb.QueryContext(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = ? AND table_type = 'BASE TABLE' ORDER BY table_name`, t.name)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, n := range names {
		var table, create string
		if err := mdb.QueryRowContext(ctx, "SHOW CREATE TABLE `"+n+"`").Scan(&table, &create); err != nil {
			return err
		}
		t.tables = append(t.tables, create)
		var any int
		err := mdb.QueryRowContext(ctx, "SELECT 1 FROM `"+n+"` LIMIT 1").Scan(&any)
		switch {
		case err == nil:
			t.filled = append(t.filled, n)
		case err != sql.ErrNoRows:
			return err
		}
	}
	return nil
}

// copyTo creates the template's tables in the (empty) database of dsn
// and copies the rows of the filled ones, in one round trip.
func (t *template) copyTo(dsn string) error {
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return err
	}
	cfg.MultiStatements = true
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		return err
	}
	defer db.Close()
	var b strings.Builder
	b.WriteString("SET SESSION foreign_key_checks = 0;\n")
	for _, create := range t.tables {
		b.WriteString(create)
		b.WriteString(";\n")
	}
	for _, n := range t.filled {
		fmt.Fprintf(&b, "INSERT INTO `%s` SELECT * FROM `%s`.`%s`;\n", n, t.name, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = db.ExecContext(ctx, b.String())
	return err
}

// sweepTemplates drops the templates of test binaries that have ended:
// those whose named lock nobody holds. Best effort: a failure leaves them.
func sweepTemplates(ctx context.Context, conn *sql.Conn) {
	rows, err := conn.QueryContext(ctx, `SELECT schema_name FROM information_schema.schemata
		WHERE schema_name LIKE ? AND IS_FREE_LOCK(schema_name) = 1`, strings.ReplaceAll(templatePrefix, "_", `\_`)+"%")
	if err != nil {
		return
	}
	var stale []string
	for rows.Next() {
		var n string
		if rows.Scan(&n) == nil {
			stale = append(stale, n)
		}
	}
	rows.Close()
	for _, n := range stale {
		conn.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+n+"`")
	}
}
