package storage

import (
	"context"
	"database/sql"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/breakdowns"
	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/testenv"
)

// The worked example of docs/capabilities.md: a third tally, beside
// history and labels. A sale's steps carry the currency they were paid in
// (its own kind of counters.Extra, which in the service would live in its
// domain's package), and the tally counts each counter's steps per
// currency in a table of its own, in the steps' transaction.

// currency is the example's kind of Extra: comparable, as every kind is.
type currency string

// currencyTally counts steps per counter and currency in counter_currency.
type currencyTally struct{}

func (currencyTally) takes(x counters.Extra) bool {
	_, ok := x.(currency)
	return ok
}

func (currencyTally) counts(changes []counters.Change) []statement {
	var rows []string
	var args []any
	for _, c := range changes {
		for _, p := range c.Steps {
			if cur, ok := p.Extra.(currency); ok && p.By != 0 {
				rows = append(rows, "(?, ?, ?)")
				args = append(args, c.Name, string(cur), p.By)
			}
		}
	}
	if rows == nil {
		return nil
	}
	return []statement{{"INSERT INTO counter_currency (name, currency, n) VALUES " + strings.Join(rows, ", ") +
		" ON DUPLICATE KEY UPDATE n = n + VALUES(n)", args}}
}

func (currencyTally) deletes() []string {
	return []string{"DELETE FROM counter_currency WHERE name = ?"}
}

func (currencyTally) purges(context.Context, *sql.DB, time.Time) []func(int) (int64, error) {
	return nil // it keeps no days
}

// currencyStore is a store counting labels (to show that two tallies
// share the write path) and currencies, with counter_currency created.
func currencyStore(t *testing.T) *CounterStore {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, testenv.MigratedDSN(t, Migrate), Options{MaxOpenConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(ctx, "CREATE TABLE counter_currency (name VARBINARY(255) NOT NULL, currency VARCHAR(3) NOT NULL, n BIGINT NOT NULL, PRIMARY KEY (name, currency))"); err != nil {
		t.Fatal(err)
	}
	s, err := NewCounterStore(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.History = true
	s.Count(Labels(true, 0), currencyTally{})
	return s
}

func currencies(t *testing.T, s *CounterStore, name string) map[string]int64 {
	t.Helper()
	rows, err := s.db.Query("SELECT currency, n FROM counter_currency WHERE name = ?", name)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var cur string
		var n int64
		if err := rows.Scan(&cur, &n); err != nil {
			t.Fatal(err)
		}
		out[cur] = n
	}
	return out
}

// A registered tally counts the steps that carry its kind on every write
// path (the lone and many-counter increments, parts of several kinds, the
// batch, the idempotent batch), in their transaction, and leaves the
// other steps alone; a bound that refuses the step refuses its count; and
// the counter's rows go with it.
func TestARegisteredTallyCountsItsStepsOnEveryPathAndGoesWithItsCounter(t *testing.T) {
	t.Parallel()
	s := currencyStore(t)
	ctx := context.Background()
	at := s.now()
	web := breakdowns.Of(breakdowns.Labels{"channel": "web"})
	writes := []func() error{
		func() error {
			_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "sale", By: 2, Extra: currency("EUR")}})
			return err
		},
		func() error {
			_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "sale", By: 3, Extra: currency("USD")}, {Name: "sale/other", By: 1, Extra: web}})
			return err
		},
		func() error {
			_, err := s.IncrementMany(ctx, []counters.Increment{{Name: "sale", By: 7, Parts: []counters.Part{
				{At: at, By: 4, Extra: currency("EUR")}, {At: at, By: 2, Extra: web}, {At: at, By: 1}}}})
			return err
		},
		func() error {
			_, err := s.Batch(ctx, []counters.Increment{{Name: "sale", By: 5, Extra: currency("USD")}, {Name: "sale", By: 1}})
			return err
		},
		func() error {
			_, _, err := s.BatchOnce(ctx, counters.Idempotency{Key: "k", Fingerprint: [32]byte{1}}, []counters.Increment{{Name: "sale", By: 10, Extra: currency("EUR")}})
			return err
		},
		func() error {
			_, err := s.Increment(ctx, "sale", 100) // no Extra: nothing to count
			return err
		},
	}
	for i, write := range writes {
		if err := write(); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	if got, want := currencies(t, s, "sale"), map[string]int64{"EUR": 16, "USD": 8}; !maps.Equal(got, want) {
		t.Fatalf("sale by currency %v, want %v", got, want)
	}
	if got := currencies(t, s, "sale/other"); len(got) != 0 {
		t.Fatalf("a labelled step counted currencies %v", got)
	}

	ceiling := int64(130)
	if _, _, err := s.Set(ctx, counters.SetRequest{Name: "sale", Value: 128, Max: counters.Bound{Value: &ceiling}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IncrementMany(ctx, []counters.Increment{{Name: "sale", By: 5, Extra: currency("EUR")}}); counters.ErrorCode(err) != counters.EOUTOFRANGE {
		t.Fatalf("a step past the bound: %v, want EOUTOFRANGE", err)
	}
	if got := currencies(t, s, "sale"); got["EUR"] != 16 {
		t.Fatalf("a refused step counted: EUR %d, want 16", got["EUR"])
	}

	if err := s.Delete(ctx, "sale"); err != nil {
		t.Fatal(err)
	}
	if got := currencies(t, s, "sale"); len(got) != 0 {
		t.Fatalf("counter_currency kept %v of a deleted counter", got)
	}
}

// A kind of Extra that no registered tally takes is written as none: the
// increment succeeds and only its value changes, by the one-statement
// path's rules.
func TestAnExtraNoTallyTakesIsWrittenAsNone(t *testing.T) {
	t.Parallel()
	s := currencyStore(t)
	s.seam.tallies.list = slices.DeleteFunc(s.seam.tallies.list, func(t Tally) bool { _, ok := t.(currencyTally); return ok })
	ctx := context.Background()
	v, err := s.IncrementMany(ctx, []counters.Increment{{Name: "sale", By: 2, Extra: currency("EUR")}})
	if err != nil || v[0] != 2 {
		t.Fatalf("IncrementMany: %v, %v; want [2]", v, err)
	}
	if got := currencies(t, s, "sale"); len(got) != 0 {
		t.Fatalf("an unregistered tally counted %v", got)
	}
}
