// Package storetest opens the MySQL store for the tests of the packages
// under the service (storage, cache, coalesce, tickets), so that they
// compile the store and not the whole service, as internal/apptest would.
package storetest

import (
	"context"
	"testing"

	"github.com/countersvc/countersvc/internal/testenv"
	"github.com/countersvc/countersvc/storage"
)

// MigratedDSN is the DSN of a fresh database with the service's schema,
// copied from the template the test binary migrates once
// (testenv.MigratedDSN): the migrations take a second or more a database
// on a loaded machine, the copy a tenth of that, and OpenStore's Open then
// finds nothing to migrate. A test of the migrations themselves takes an
// empty database (testenv.MySQLDSN) instead.
func MigratedDSN(tb testing.TB) string {
	tb.Helper()
	return testenv.MigratedDSN(tb, storage.Migrate)
}

// OpenStore opens the database of dsn (migrating it) and its counter store,
// both closed when the test ends.
func OpenStore(tb testing.TB, dsn string) (*storage.CounterStore, *storage.DB) {
	tb.Helper()
	ctx := context.Background()
	db, err := storage.Open(ctx, dsn, storage.Options{MaxOpenConns: 32})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	store, err := storage.NewCounterStore(ctx, db)
	if err != nil {
		tb.Fatal(err)
	}
	return store, db
}
