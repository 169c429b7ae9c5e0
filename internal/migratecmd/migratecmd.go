// Package migratecmd is `countersvc migrate ...`, the operator's hand on
// the schema, kept out of main.go so that main shows the wiring order alone.
package migratecmd

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/countersvc/countersvc/internal/config"
	"github.com/countersvc/countersvc/storage"
)

const usage = `usage: countersvc migrate status | up | force N
  status   where the database's schema stands; exit status 1 when a migration failed part-way (dirty)
  up       apply the pending migrations now, as a start of the service would
  force N  record N as the last migration applied, clean, running nothing (0: none);
           the repair after a failed migration, once it was finished or undone by hand`

// Run is `countersvc migrate ...` (args without the program's name), the
// operator's hand on the schema: it reaches a database that the service refuses to start on (a
// migration failed part-way) and says where it stands. It connects with
// COUNTERS_MYSQL_DSN and COUNTERS_MYSQL_WAIT, like the service, and
// returns the exit status: 0 done, 1 failed, 2 misused.
func Run(ctx context.Context, cfg config.MySQL, args []string, stdout, stderr io.Writer) int {
	misused := func() int {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	if len(args) < 2 || args[0] != "migrate" {
		return misused()
	}
	var force int
	switch {
	case args[1] == "force" && len(args) == 3:
		n, err := strconv.Atoi(args[2])
		if err != nil || n < 0 {
			return misused()
		}
		force = n
	case (args[1] == "status" || args[1] == "up") && len(args) == 2:
	default:
		return misused()
	}
	failed := func(err error) int {
		fmt.Fprintln(stderr, "countersvc migrate:", err)
		return 1
	}

	db, err := storage.Connect(ctx, cfg.DSN, storage.Options{MaxOpenConns: 4, ConnectWait: cfg.ConnectWait})
	if err != nil {
		return failed(err)
	}
	defer db.Close()
	switch args[1] {
	case "up":
		err = storage.Migrate(ctx, db.DB)
	case "force":
		err = storage.ForceMigration(ctx, db.DB, force)
	}
	if err != nil {
		return failed(err)
	}
	st, err := storage.MigrationStatus(ctx, db.DB)
	if err != nil {
		return failed(err)
	}
	fmt.Fprintln(stdout, st)
	if st.Dirty {
		return 1
	}
	return 0
}
