package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
)

// oldRunner leaves a database as the runner before golang-migrate left it
// after applying the migrations up to last: their SQL applied, and one row
// per file in schema_migration, named as it named them.
func oldRunner(tb testing.TB, db *storage.DB, last int) {
	tb.Helper()
	if _, err := db.Exec(`CREATE TABLE schema_migration (
		name VARCHAR(255) NOT NULL PRIMARY KEY,
		applied_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6)
	) ENGINE=InnoDB`); err != nil {
		tb.Fatal(err)
	}
	files, err := filepath.Glob("migrations/*.up.sql")
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range files {
		digits, _, _ := strings.Cut(filepath.Base(f), "_")
		if v, _ := strconv.Atoi(digits); v > last {
			continue
		}
		body, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := db.Exec(string(body)); err != nil {
			tb.Fatalf("%s: %v", f, err)
		}
		old := "migrations/" + strings.TrimSuffix(filepath.Base(f), ".up.sql") + ".sql"
		if _, err := db.Exec("INSERT INTO schema_migration (name) VALUES (?)", old); err != nil {
			tb.Fatal(err)
		}
	}
}

// A database that the runner before golang-migrate migrated starts without
// an error and without running again what it applied (005's ALTER would
// fail if it ran twice), keeps its data, and ends at the last version.
func TestDatabaseOfTheOldRunnerUpgradesWithoutRunningAnythingAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		last int
	}{
		{"every migration of the old runner applied", 6},
		{"the old runner stopped before 005", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := testenv.MySQLDSN(t)
			old, err := storage.Connect(ctx, dsn, storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer old.Close()
			oldRunner(t, old, tc.last)
			if _, err := old.Exec("INSERT INTO counter (name, value, created_at, updated_at) VALUES ('kept', 7, NOW(6), NOW(6))"); err != nil {
				t.Fatal(err)
			}

			db, err := storage.Open(ctx, dsn, storage.Options{})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer db.Close()
			st, err := storage.MigrationStatus(ctx, db.DB)
			if err != nil || st.Version != st.Latest || st.Version < 6 || st.Dirty {
				t.Fatalf("state = %+v, %v; want every migration applied", st, err)
			}
			var v int64
			if err := db.QueryRow("SELECT value FROM counter WHERE name = 'kept'").Scan(&v); err != nil || v != 7 {
				t.Fatalf("kept = %d, %v; want 7", v, err)
			}
			var keyID int
			if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'idempotency_record' AND COLUMN_NAME = 'key_id'").Scan(&keyID); err != nil || keyID != 1 {
				t.Fatalf("idempotency_record.key_id columns = %d, %v; want 1", keyID, err)
			}
		})
	}
}

// Services starting at once on a fresh database: every Open succeeds, and
// each sees every migration applied.
func TestOpenOfServicesStartingAtOnceOnAFreshDatabaseSucceedsEverywhere(t *testing.T) {
	t.Parallel()
	const services = 6
	ctx := context.Background()
	dsn := testenv.MySQLDSN(t)
	errs := make(chan error, services)
	for range services {
		go func() {
			db, err := storage.Open(ctx, dsn, storage.Options{MaxOpenConns: 2})
			if err != nil {
				errs <- err
				return
			}
			defer db.Close()
			st, err := storage.MigrationStatus(ctx, db.DB)
			if err == nil && (st.Version != st.Latest || st.Dirty) {
				t.Errorf("a service sees %+v, want every migration applied", st)
			}
			errs <- err
		}()
	}
	for range services {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
