package storage

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/countersvc/countersvc/internal/testenv"
)

// migrations is a folder of migrations for the tests, files by name.
func migrations(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, body := range files {
		fsys["migrations/"+name] = &fstest.MapFile{Data: []byte(body)}
	}
	return fsys
}

func mustConnect(tb testing.TB, dsn string) *DB {
	tb.Helper()
	db, err := Connect(context.Background(), dsn, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// Neither file may run twice: a second CREATE TABLE or INSERT of the same
// row fails, so every start that succeeds proves that the others left the
// migrations to one of them.
var runOnce = migrations(map[string]string{
	"001_once.up.sql":  "CREATE TABLE once (n INT NOT NULL PRIMARY KEY);\nDO SLEEP(0.5);\nINSERT INTO once VALUES (1);\n",
	"002_twice.up.sql": "INSERT INTO once VALUES (2);\n",
})

func TestMigrationsOfProcessesStartingAtOnceRunOnceAndEveryoneSeesTheLastVersion(t *testing.T) {
	t.Parallel()
	dsn := testenv.MySQLDSN(t)
	migrateFromEverywhere(t, []string{dsn, dsn, dsn, dsn, dsn, dsn})
}

// GET_LOCK would let one process per node in; the lock row lets one in
// the whole cluster. Rounds of two processes per node on a fresh database.
func TestMigrationsOfProcessesOnEveryGaleraNodeRunOnce(t *testing.T) {
	t.Parallel()
	testenv.NeedCluster(t)
	g := testenv.StartGalera(t)
	for round := range 5 {
		name := fmt.Sprintf("migrate_once_%d_%d", round, time.Now().UnixNano())
		var dsns []string
		for _, n := range g.Nodes {
			dsns = append(dsns, n.DSN(name), n.DSN(name))
		}
		migrateFromEverywhere(t, dsns)
	}
}

// migrateFromEverywhere migrates runOnce from a process per DSN at once:
// every one succeeds and sees the last version, and the file ran once.
func migrateFromEverywhere(t *testing.T, dsns []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	type result struct {
		st  MigrationState
		err error
	}
	results := make(chan result, len(dsns))
	for _, dsn := range dsns {
		go func() {
			db, err := Connect(ctx, dsn, Options{})
			if err != nil {
				results <- result{err: err}
				return
			}
			defer db.Close()
			if err := migrateUp(ctx, db.DB, runOnce, nil); err != nil {
				results <- result{err: err}
				return
			}
			st, err := migrationStatus(ctx, db.DB, runOnce)
			results <- result{st, err}
		}()
	}
	for range dsns {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.st.Version != 2 || r.st.Dirty {
			t.Errorf("a process sees version %d (dirty %v), want 2", r.st.Version, r.st.Dirty)
		}
	}
	var rows int
	if err := mustConnect(t, dsns[0]).QueryRow("SELECT COUNT(*) FROM once").Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("rows of once = %d, %v; want 2", rows, err)
	}
}

// A migration that fails part-way leaves the database dirty: that start
// and every later one refuse it, naming the migration and the commands
// that repair it, and run nothing, until an operator forces a version.
func TestFailedMigrationIsRefusedUntilAnOperatorForcesAVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := mustConnect(t, testenv.MySQLDSN(t))
	broken := migrations(map[string]string{
		"001_a.up.sql": "CREATE TABLE a (n INT NOT NULL PRIMARY KEY);\n",
		// The second statement fails after the first was committed.
		"002_b.up.sql": "CREATE TABLE IF NOT EXISTS b (n INT NOT NULL PRIMARY KEY);\nINSERT INTO no_such_table VALUES (1);\n",
	})
	fixed := migrations(map[string]string{
		"001_a.up.sql": "CREATE TABLE a (n INT NOT NULL PRIMARY KEY);\n",
		"002_b.up.sql": "CREATE TABLE IF NOT EXISTS b (n INT NOT NULL PRIMARY KEY);\nINSERT INTO b VALUES (1);\n",
	})
	want := []string{"migration 2 (002_b.up.sql) failed part-way", "dirty", "countersvc migrate force 1", "countersvc migrate force 2", "countersvc migrate status"}

	for _, tc := range []struct {
		name  string
		cause string // in the refusal, when it failed just now
	}{
		{"the start that ran it says why", "no_such_table"},
		{"a later start refuses without running it", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := migrateUp(ctx, db.DB, broken, nil)
			if err == nil {
				t.Fatal("Migrate succeeded on a failing migration")
			}
			for _, w := range append(want, tc.cause) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "CREATE TABLE") {
				t.Errorf("error %q quotes the migration's SQL", err)
			}
			st, err := migrationStatus(ctx, db.DB, broken)
			if err != nil || st.Version != 2 || !st.Dirty {
				t.Fatalf("state = %+v, %v; want 2, dirty", st, err)
			}
		})
	}

	t.Run("forcing the version before it runs it again", func(t *testing.T) {
		if err := forceMigration(ctx, db.DB, fixed, 1); err != nil {
			t.Fatal(err)
		}
		if err := migrateUp(ctx, db.DB, fixed, nil); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.QueryRow("SELECT COUNT(*) FROM b").Scan(&n); err != nil || n != 1 {
			t.Fatalf("rows of b = %d, %v; want 1", n, err)
		}
		if st, err := migrationStatus(ctx, db.DB, fixed); err != nil || st.Version != 2 || st.Dirty {
			t.Fatalf("state = %+v, %v; want 2, clean", st, err)
		}
	})

	t.Run("forcing a version the binary does not have is refused", func(t *testing.T) {
		if err := forceMigration(ctx, db.DB, fixed, 3); err == nil || !strings.Contains(err.Error(), "no migration 3") {
			t.Fatalf("force 3 = %v, want a refusal", err)
		}
	})
}

// The lock row of a process that died while migrating blocks the others
// only until its lease runs out; a live holder's is waited for.
func TestMigrationLockOfADeadProcessIsTakenOverWhenItsLeaseRunsOut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		leaseEnd string // SQL: when the other holder's lease runs out
		wait     time.Duration
		wantErr  string
	}{
		{"a lease that ran out is taken over", "NOW(6) - INTERVAL 1 SECOND", time.Minute, ""},
		{"a lease that runs out while waiting is taken over", "NOW(6) + INTERVAL 1 SECOND", time.Minute, ""},
		{"a live lease is waited for and named", "NOW(6) + INTERVAL 1 HOUR", time.Second, "other-host pid 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := mustConnect(t, testenv.MySQLDSN(t))
			if _, err := lockSchema(context.Background(), db.DB); err != nil { // creates the table
				t.Fatal(err)
			}
			for _, q := range []string{
				"DELETE FROM " + lockTable,
				"INSERT INTO " + lockTable + " VALUES (1, 'other-host pid 1', " + tc.leaseEnd + ")",
			} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), tc.wait)
			defer cancel()
			err := migrateUp(ctx, db.DB, runOnce, nil)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("Migrate = %v, want error %q", err, tc.wantErr)
			}
			var holders int
			if err := db.QueryRow("SELECT COUNT(*) FROM " + lockTable + " WHERE holder <> 'other-host pid 1'").Scan(&holders); err != nil || holders != 0 {
				t.Fatalf("lock rows of this process after Migrate = %d, %v; want 0", holders, err)
			}
		})
	}
}

// golang-migrate skips a file whose name it cannot parse without a word;
// a migration added as 007_x.sql would never run. Such a name stops the
// service instead, saying how to rename it.
func TestMigrationNotNamedUpSQLIsRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ file, want string }{
		{"007_x.sql", "git mv storage/migrations/007_x.sql storage/migrations/007_x.up.sql"},
		{"007_x.down.sql", "007_x.down.sql"},
		{"notes.txt", "notes.txt"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			fsys := migrations(map[string]string{"001_a.up.sql": "DO 1;", tc.file: "DO 1;"})
			if _, err := migrationNames(fsys); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("migrationNames = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
