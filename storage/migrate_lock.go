package storage

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"time"

	"github.com/countersvc/countersvc/internal/deadline"
)

// schemaLock lets one process at a time migrate a database, across every
// node of a Galera cluster too. MySQL's GET_LOCK (what golang-migrate and
// the runner before it take) lives on one server: on Galera each node has
// its own, and services starting on two nodes at once would migrate side
// by side. A row, though, is the cluster's: of two nodes that insert the
// lock row at once, certification lets one commit and rolls the other back
// with a deadlock (1213), and a node that inserts it after the other's
// commit arrived meets a duplicate key. On one server the row works the
// same way, by its primary key.
//
// The row is a lease: its holder renews it while it works, and deletes it
// when done. A process that dies holding it (killed mid-migration) blocks
// the others until the lease runs out, schemaLease after its last renewal;
// then the first of them to see it expired takes it over.
type schemaLock struct {
	db     *sql.DB
	holder string
	stop   context.CancelFunc
	done   chan struct{}
}

const (
	schemaLease      = 15 * time.Second
	schemaLeaseRenew = schemaLease / 3
	lockTable        = "schema_lock"
)

// lockSchema waits until it holds the lock, or ctx is done.
func lockSchema(ctx context.Context, db *sql.DB) (*schemaLock, error) {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS `+lockTable+` (
		id         TINYINT      NOT NULL,
		holder     VARCHAR(255) NOT NULL,
		expires_at DATETIME(6)  NOT NULL,
		PRIMARY KEY (id)
	) ENGINE=InnoDB`); err != nil {
		return nil, fmt.Errorf("creating %s: %w", lockTable, err)
	}
	l := &schemaLock{db: db, holder: lockHolder(), done: make(chan struct{})}
	for {
		ok, err := l.try(ctx)
		if ok {
			break
		}
		// A wait that ran out during the attempt is reported as a wait,
		// naming the holder, below.
		if err != nil && !retryable(err) && ctx.Err() == nil {
			return nil, fmt.Errorf("taking the migration lock: %w", err)
		}
		select {
		case <-ctx.Done():
			var holder string
			db.QueryRowContext(context.WithoutCancel(ctx), "SELECT holder FROM "+lockTable+" WHERE id = 1").Scan(&holder)
			return nil, fmt.Errorf("waiting for the migration lock (%s holds it; a lease runs out %s after its holder stops renewing it): %w",
				holder, schemaLease, ctx.Err())
		case <-time.After(50*time.Millisecond + mrand.N(100*time.Millisecond)):
		}
	}
	var renew context.Context
	renew, l.stop = context.WithCancel(context.WithoutCancel(ctx))
	go l.renew(renew)
	return l, nil
}

// try takes the lock if nobody holds it, or if its holder's lease ran out.
func (l *schemaLock) try(ctx context.Context) (bool, error) {
	lease := schemaLease.Microseconds()
	_, err := l.db.ExecContext(ctx, "INSERT INTO "+lockTable+" (id, holder, expires_at) VALUES (1, ?, NOW(6) + INTERVAL ? MICROSECOND)", l.holder, lease)
	if err == nil {
		return true, nil
	} else if !isDuplicate(err) {
		return false, err
	}
	res, err := l.db.ExecContext(ctx, "UPDATE "+lockTable+" SET holder = ?, expires_at = NOW(6) + INTERVAL ? MICROSECOND WHERE id = 1 AND expires_at < NOW(6)", l.holder, lease)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// renew extends the lease until ctx is done. A renewal that fails is
// tried again at the next tick; should the lease run out meanwhile,
// another process may start migrating too, which the migrations, written
// to be safe to repeat, survive.
func (l *schemaLock) renew(ctx context.Context) {
	defer close(l.done)
	deadline.Every(ctx, schemaLeaseRenew, func(ctx context.Context) {
		l.db.ExecContext(ctx, "UPDATE "+lockTable+" SET expires_at = NOW(6) + INTERVAL ? MICROSECOND WHERE id = 1 AND holder = ?", schemaLease.Microseconds(), l.holder)
	})
}

// release gives the lock up. Should the DELETE fail, the lease runs out.
func (l *schemaLock) release() {
	l.stop()
	<-l.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	execRetried(ctx, l.db, "storage.Migrate", "DELETE FROM "+lockTable+" WHERE id = 1 AND holder = ?", l.holder)
}

// lockHolder names this process for the lock row, so that an operator
// who finds the row knows whose it is; the random part tells two
// migrations of one process apart.
func lockHolder() string {
	host, _ := os.Hostname()
	b := make([]byte, 8)
	rand.Read(b)
	return fmt.Sprintf("%.200s pid %d %s", host, os.Getpid(), hex.EncodeToString(b))
}
