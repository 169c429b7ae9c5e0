package storage

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database"
	migratemysql "github.com/golang-migrate/migrate/v4/database/mysql"
	"github.com/golang-migrate/migrate/v4/source"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

// The migrations are golang-migrate's: storage/migrations/NNN_what.up.sql,
// applied in the order of NNN, each file sent whole as one multi-statement
// query (the DSN has multiStatements), so that MySQL's own parser, not
// ours, finds where statements end. There are no down migrations: a
// schema only moves forward.
//
// golang-migrate keeps one row in schema_version: the last migration
// applied and whether it failed part-way (dirty). MySQL commits DDL
// statement by statement, so a file that failed may have left some of its
// statements done: a dirty database stops every start until an operator
// has looked and said with `countersvc migrate force N` where it stands.
// Each file is still written so that running it again after a partial run
// is safe (IF NOT EXISTS; one ALTER per change), which makes "force the
// version before it, start again" the usual repair.
//
// golang-migrate's own lock on MySQL is GET_LOCK, which a Galera cluster
// does not share between nodes; Migrate takes schemaLock, a row that every
// node agrees on, instead (see migrate_lock.go).

//go:embed migrations/*.sql
var migrationFiles embed.FS

// versionTable is golang-migrate's bookkeeping; legacyTable is where the
// runner before it recorded the names of the files it had applied.
const (
	versionTable = "schema_version"
	legacyTable  = "schema_migration"
)

// MigrationState says where a database's schema stands.
type MigrationState struct {
	Version int  // the last migration applied; 0 for none
	Dirty   bool // Version failed part-way
	Latest  int  // the last migration this binary has
	// Legacy is the last migration of an unbroken run recorded by the
	// runner before golang-migrate, when the database was never migrated
	// since: the next Migrate adopts it as Version.
	Legacy int
	// Files names the migrations this binary has, by version.
	Files map[int]string
}

// Migrate applies the embedded migrations that the database has not seen,
// in order. Several processes may start at once, on one server or on the
// nodes of a Galera cluster: one applies them while the others wait for it
// and then find nothing left to do. A database migrated by the runner
// before golang-migrate (schema_migration) is adopted without running
// anything again. It refuses a dirty database, and returns nil without
// touching a database that a newer binary migrated further than it knows.
func Migrate(ctx context.Context, db *sql.DB) error {
	return migrateUp(ctx, db, migrationFiles, nil)
}

// MigrationStatus reports where the database stands, without waiting for
// the migration lock or changing anything but creating the bookkeeping
// table when it is missing.
func MigrationStatus(ctx context.Context, db *sql.DB) (MigrationState, error) {
	return migrationStatus(ctx, db, migrationFiles)
}

func migrationStatus(ctx context.Context, db *sql.DB, fsys fs.FS) (MigrationState, error) {
	mg, err := openMigrator(ctx, db, fsys, false)
	if err != nil {
		return MigrationState{}, err
	}
	defer mg.close()
	return mg.state(ctx)
}

// ForceMigration records version as the last migration applied, clean,
// without running anything: the repair after a failed migration, once an
// operator has finished or undone it by hand. 0 means none applied.
func ForceMigration(ctx context.Context, db *sql.DB, version int) error {
	return forceMigration(ctx, db, migrationFiles, version)
}

func forceMigration(ctx context.Context, db *sql.DB, fsys fs.FS, version int) error {
	mg, err := openMigrator(ctx, db, fsys, true)
	if err != nil {
		return err
	}
	defer mg.close()
	if _, ok := mg.files[version]; !ok && version != 0 {
		return fmt.Errorf("there is no migration %d: this binary has 1 to %d", version, mg.latest)
	}
	if version == 0 {
		version = database.NilVersion
	}
	return mg.m.Force(version)
}

// migrateUp is Migrate of the migrations of fsys; it logs to log, when not
// nil, what it changed and a schema newer than the binary.
func migrateUp(ctx context.Context, db *sql.DB, fsys fs.FS, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mg, err := openMigrator(ctx, db, fsys, true)
	if err != nil {
		return err
	}
	defer mg.close()
	if adopted, err := mg.adoptLegacy(ctx); err != nil {
		return err
	} else if adopted > 0 {
		log.Info("schema: took over the record of the migrations applied before golang-migrate, running none again",
			"from", legacyTable, "to", versionTable, "version", adopted)
	}
	before, err := mg.state(ctx)
	if err != nil {
		return err
	}
	switch {
	case before.Dirty:
		return mg.dirty(before.Version, nil)
	case before.Version > before.Latest:
		log.Warn("schema: the database is at a migration newer than this binary has; leaving it alone",
			"version", before.Version, "latest", before.Latest)
		return nil
	case before.Version == before.Latest:
		return nil
	}
	// golang-migrate runs without a context. Its GracefulStop would stop it
	// between two migrations, but the library's two goroutines then both
	// write the flag it keeps (a data race the race detector reports), so
	// the migrations run one step at a time, ctx checked between steps.
	for err == nil && ctx.Err() == nil {
		err = mg.m.Steps(1)
	}
	if errors.Is(err, os.ErrNotExist) { // no step left: the last is applied
		err = nil
	}
	// What Up did, read even when ctx ran out meanwhile.
	after, aerr := mg.state(context.WithoutCancel(ctx))
	if aerr == nil && after.Version != before.Version {
		log.Info("schema: applied migrations", "from", before.Version, "to", after.Version, "dirty", after.Dirty)
	}
	if err == nil || errors.Is(err, migrate.ErrNoChange) {
		if ctx.Err() != nil && (aerr != nil || after.Version < after.Latest) {
			return fmt.Errorf("the migrations stopped before the last, out of time: %w", ctx.Err())
		}
		return nil
	}
	// The driver's error quotes the whole file; the server's cause is
	// what an operator needs.
	var de database.Error
	if errors.As(err, &de) && de.OrigErr != nil {
		err = de.OrigErr
	}
	if aerr == nil && after.Dirty {
		return mg.dirty(after.Version, err)
	}
	return fmt.Errorf("applying migrations: %w", err)
}

// migrator is golang-migrate on one connection of db and the migrations
// of fsys, and, when it may change the database, the lock that makes it
// the only one.
type migrator struct {
	m      *migrate.Migrate
	conn   *sql.Conn
	lock   *schemaLock
	files  map[int]string // file name by version
	latest int
}

func openMigrator(ctx context.Context, db *sql.DB, fsys fs.FS, locked bool) (_ *migrator, err error) {
	mg := &migrator{}
	if mg.files, err = migrationNames(fsys); err != nil {
		return nil, err
	}
	for v := range mg.files {
		mg.latest = max(mg.latest, v)
	}
	defer func() {
		if err != nil {
			mg.close()
		}
	}()
	if locked {
		if mg.lock, err = lockSchema(ctx, db); err != nil {
			return nil, err
		}
	}
	if mg.conn, err = db.Conn(ctx); err != nil {
		return nil, err
	}
	// golang-migrate creates its table with a plain CREATE TABLE when it
	// finds none, which fails (1050) in a status read beside a first
	// start's migration, which holds the lock that the read does not.
	if _, err := mg.conn.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS "+versionTable+" (version BIGINT NOT NULL PRIMARY KEY, dirty BOOLEAN NOT NULL)"); err != nil {
		return nil, fmt.Errorf("creating %s: %w", versionTable, err)
	}
	// NoLock: schemaLock is held instead of golang-migrate's GET_LOCK.
	drv, err := migratemysql.WithConnection(ctx, mg.conn, &migratemysql.Config{MigrationsTable: versionTable, NoLock: true})
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", versionTable, err)
	}
	src, err := iofs.New(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	if mg.m, err = migrate.NewWithInstance("iofs", src, "mysql", drv); err != nil {
		return nil, err
	}
	return mg, nil
}

// close closes the connection (golang-migrate's driver closes it; it was
// made WithConnection, so it leaves the pool alone) and lets go of the
// lock.
func (mg *migrator) close() {
	if mg.m != nil {
		mg.m.Close()
	} else if mg.conn != nil {
		mg.conn.Close()
	}
	if mg.lock != nil {
		mg.lock.release()
	}
}

func (mg *migrator) state(ctx context.Context) (MigrationState, error) {
	st := MigrationState{Latest: mg.latest, Files: mg.files}
	v, dirty, err := mg.m.Version()
	switch {
	case errors.Is(err, migrate.ErrNilVersion):
		st.Legacy, err = mg.legacyVersion(ctx)
		return st, err
	case err != nil:
		return st, fmt.Errorf("reading %s: %w", versionTable, err)
	}
	st.Version, st.Dirty = int(v), dirty
	return st, nil
}

// legacyVersion is the last migration of the unbroken run from the first
// that the runner before golang-migrate recorded in schema_migration (its
// rows name files: "migrations/001_counter.sql"), 0 when it recorded none
// or the table is missing.
func (mg *migrator) legacyVersion(ctx context.Context) (int, error) {
	rows, err := mg.conn.QueryContext(ctx, "SELECT name FROM "+legacyTable)
	if mysqlErrNumber(err) == erNoSuchTable {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("reading %s: %w", legacyTable, err)
	}
	defer rows.Close()
	recorded := map[int]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return 0, err
		}
		digits, _, _ := strings.Cut(path.Base(name), "_")
		if v, err := strconv.Atoi(digits); err == nil {
			recorded[v] = true
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("reading %s: %w", legacyTable, err)
	}
	last := 0
	for v := 1; recorded[v] && mg.files[v] != ""; v++ {
		last = v
	}
	return last, nil
}

// adoptLegacy records, for a database that only the runner before
// golang-migrate has migrated, the last migration it applied, so that
// nothing runs twice. schema_migration stays, unread from then on: a
// binary of that runner still starts on the database.
func (mg *migrator) adoptLegacy(ctx context.Context) (int, error) {
	st, err := mg.state(ctx)
	if err != nil || st.Legacy == 0 {
		return 0, err
	}
	if err := mg.m.Force(st.Legacy); err != nil {
		return 0, fmt.Errorf("adopting %s's migrations 1 to %d: %w", legacyTable, st.Legacy, err)
	}
	return st.Legacy, nil
}

// dirty is the refusal to go on from a failed migration: which, why when
// known, and the commands that repair it.
func (mg *migrator) dirty(version int, cause error) error {
	why := ""
	if cause != nil {
		why = ": " + cause.Error()
	}
	st := MigrationState{Version: version, Dirty: true, Latest: mg.latest, Files: mg.files}
	return fmt.Errorf("migration %d (%s) failed part-way%s; the database is marked dirty and the service will not start on it. %s",
		version, mg.files[version], why, st.repair())
}

// repair says how to go on from a dirty version.
func (st MigrationState) repair() string {
	return fmt.Sprintf("Repair what the migration left half-done, then run `countersvc migrate force %d` to have the next start run it again "+
		"(its statements are written to be safe to repeat), or `countersvc migrate force %d` if it is now complete; "+
		"`countersvc migrate status` shows the state", st.before(st.Version), st.Version)
}

// before is the migration before v, 0 for none.
func (st MigrationState) before(v int) int {
	prev := 0
	for w := range st.Files {
		if w < v {
			prev = max(prev, w)
		}
	}
	return prev
}

// String says where the database stands, for an operator.
func (st MigrationState) String() string {
	at := fmt.Sprintf("at migration %d (%s)", st.Version, st.Files[st.Version])
	switch {
	case st.Dirty:
		return at + ", DIRTY: it failed part-way and the service will not start. " + st.repair()
	case st.Version == 0 && st.Legacy > 0:
		return fmt.Sprintf("no migration recorded yet in %s; %s (the runner before it) records 1 to %d, "+
			"which the next start or `countersvc migrate up` adopts without running them again", versionTable, legacyTable, st.Legacy)
	case st.Version > st.Latest:
		return fmt.Sprintf("at migration %d, newer than this binary, which has 1 to %d: it leaves the schema alone", st.Version, st.Latest)
	case st.Version == st.Latest:
		return at + ": up to date"
	}
	var pending []string
	for v := st.Version + 1; v <= st.Latest; v++ {
		if f, ok := st.Files[v]; ok {
			pending = append(pending, f)
		}
	}
	if st.Version == 0 {
		at = "no migration applied"
	}
	return at + "; pending, for the next start or `countersvc migrate up`: " + strings.Join(pending, ", ")
}

// migrationNames lists the migrations of fsys by version, and refuses a
// file in migrations/ that golang-migrate would skip without a word
// because its name is not NNN_what.up.sql.
func migrationNames(fsys fs.FS) (map[int]string, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, err
	}
	files := map[int]string{}
	for _, e := range entries {
		m, err := source.DefaultParse(e.Name())
		if err != nil || m.Direction != source.Up {
			return nil, fmt.Errorf("storage/migrations/%s: a migration's name must be NNN_what.up.sql (rename it: git mv storage/migrations/%[1]s storage/migrations/%s.up.sql)",
				e.Name(), strings.TrimSuffix(strings.TrimSuffix(e.Name(), ".sql"), ".up"))
		}
		if other, dup := files[int(m.Version)]; dup {
			return nil, fmt.Errorf("storage/migrations: %s and %s have the same version %d", other, e.Name(), m.Version)
		}
		files[int(m.Version)] = e.Name()
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("storage/migrations: %w", os.ErrNotExist)
	}
	return files, nil
}
