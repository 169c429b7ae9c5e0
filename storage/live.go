package storage

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/countersvc/countersvc/live"
)

// newerThanStored is the updated_at that a write of a counter stores: its
// own clock reading (expr), or one microsecond past the stored one when
// that is not earlier. Every write statement of a counter row sets it, under
// the row's lock, so a counter's updated_at is strictly increasing in commit
// order whatever the writers' clocks say: it is the version that live
// updates order a counter's states by and use as their event ids (see
// package live). It costs nothing: the same statement, the same round trip.
func newerThanStored(expr string) string {
	return "GREATEST(" + expr + ", updated_at + INTERVAL 1 MICROSECOND)"
}

// LiveStore is live updates' own store: it reads the counters that
// streams watch, always from MySQL itself (a stream must never go back,
// so never from a cache), as live.Reader.
type LiveStore struct {
	db *sql.DB
}

var _ live.Reader = (*LiveStore)(nil)

// NewLiveStore returns the live updates' store of db.
func NewLiveStore(db *DB) *LiveStore { return &LiveStore{db: db.DB} }

// LiveOf returns the live updates' store of the database s writes to.
func LiveOf(s *CounterStore) *LiveStore { return &LiveStore{db: s.db} }

// ReadLive implements live.Reader in one query: the named counters, and
// those under the prefixes updated after q.Since. Reserved names are never
// read through a prefix.
func (s *LiveStore) ReadLive(ctx context.Context, q live.Query) ([]live.Update, error) {
	var where []string
	var args []any
	if len(q.Names) > 0 {
		where = append(where, "name IN ("+placeholders("?", ", ", len(q.Names))+")")
		for _, n := range q.Names {
			args = append(args, n)
		}
	}
	if len(q.Prefixes) > 0 {
		since := time.UnixMicro(q.Since).UTC()
		for _, p := range q.Prefixes {
			where = append(where, "(name LIKE ? ESCAPE '!' AND "+notReserved+" AND updated_at > ?)")
			args = append(args, likePrefix(p), since)
		}
	}
	if len(where) == 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, "SELECT name, value, updated_at FROM counter WHERE "+strings.Join(where, " OR "), args...)
	if err != nil {
		return nil, mapError("storage.ReadLive", err, false)
	}
	defer rows.Close()
	var out []live.Update
	for rows.Next() {
		var u live.Update
		var at time.Time
		if err := rows.Scan(&u.Name, &u.Value, &at); err != nil {
			return nil, mapError("storage.ReadLive", err, false)
		}
		u.Version = at.UnixMicro()
		out = append(out, u)
	}
	return out, mapError("storage.ReadLive", rows.Err(), false)
}
