package main_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/internal/testenv"
)

// migrate runs `countersvc migrate args...` on dsn and returns its exit
// status and what it wrote.
func migrate(t *testing.T, bin, dsn string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"migrate"}, args...)...)
	cmd.Env = append(os.Environ(), "COUNTERS_MYSQL_DSN="+dsn, "COUNTERS_REDIS_URL=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), string(out)
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// migrationFile is the last migration of storage/migrations, and the one
// before it (versions may have gaps).
type migrationFile struct {
	version, before int
	file            string
}

func lastMigration(t *testing.T) migrationFile {
	t.Helper()
	entries, err := os.ReadDir("storage/migrations")
	if err != nil {
		t.Fatal(err)
	}
	var last migrationFile
	for _, e := range entries {
		v, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			t.Fatalf("migration file %s has no version", e.Name())
		}
		if v > last.version {
			last = migrationFile{version: v, before: last.version, file: e.Name()}
		} else if v > last.before {
			last.before = v
		}
	}
	return last
}

// The operator's commands, in the order of a failed migration's life:
// the service refuses the dirty database, naming the migration and the
// repair; status says so; force repairs it; the service starts again.
func TestMigrateCommandReportsAndRepairsAFailedMigration(t *testing.T) {
	t.Parallel()
	bin := buildBinary(t)
	dsn := testenv.MySQLDSN(t)
	steps := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"status of a fresh database lists every migration pending", []string{"status"}, 0, "no migration applied; pending, for the next start or `countersvc migrate up`: 001_counter.up.sql, "},
		{"up applies them", []string{"up"}, 0, "up to date"},
		{"force records an earlier version without running anything", []string{"force", "5"}, 0, "at migration 5 (005_api_keys.up.sql); pending"},
		{"up after force runs what force left pending", []string{"up"}, 0, "up to date"},
		{"force of a migration the binary does not have is refused", []string{"force", "999"}, 1, "there is no migration 999"},
		{"force needs a number", []string{"force", "five"}, 2, "usage: countersvc migrate"},
		{"an unknown command is refused with the usage", []string{"down"}, 2, "usage: countersvc migrate"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			if code, out := migrate(t, bin, dsn, s.args...); code != s.wantCode || !strings.Contains(out, s.want) {
				t.Fatalf("migrate %s: exit %d, %q; want exit %d saying %q", strings.Join(s.args, " "), code, out, s.wantCode, s.want)
			}
		})
	}

	// As the last migration leaves the database when it failed part-way.
	last := lastMigration(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE schema_version SET dirty = 1"); err != nil {
		t.Fatal(err)
	}
	t.Run("the service refuses a dirty database, naming the migration and the repair", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin)
		cmd.Env = append(os.Environ(), "COUNTERS_MYSQL_DSN="+dsn, "COUNTERS_REDIS_URL=", "COUNTERS_ADDR=127.0.0.1:0")
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("the service started on a dirty database: %s", out)
		}
		for _, want := range []string{fmt.Sprintf("migration %d (%s) failed part-way", last.version, last.file),
			fmt.Sprintf("countersvc migrate force %d", last.before), fmt.Sprintf("countersvc migrate force %d", last.version)} {
			if !strings.Contains(string(out), want) {
				t.Errorf("the service's refusal %q does not say %q", out, want)
			}
		}
	})
	t.Run("status says dirty and how to repair it", func(t *testing.T) {
		if code, out := migrate(t, bin, dsn, "status"); code != 1 || !strings.Contains(out, "DIRTY") || !strings.Contains(out, fmt.Sprintf("countersvc migrate force %d", last.before)) {
			t.Fatalf("status: exit %d, %q; want 1 saying DIRTY and the repair", code, out)
		}
	})
	t.Run("after force the service starts", func(t *testing.T) {
		if code, out := migrate(t, bin, dsn, "force", fmt.Sprint(last.version)); code != 0 || !strings.Contains(out, "up to date") {
			t.Fatalf("force %d: exit %d, %q", last.version, code, out)
		}
		startProcess(t, bin, dsn)
	})
}
