package visitors_test

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/countersvc/countersvc/visitors"
)

// countingSalts is LocalSalts that counts the fetches, and fails while
// fail is set.
type countingSalts struct {
	visitors.Salts
	mu      sync.Mutex
	fetches int
	fail    error
}

func (c *countingSalts) DailySalt(ctx context.Context, day time.Time, fresh []byte) ([]byte, error) {
	c.mu.Lock()
	c.fetches++
	fail := c.fail
	c.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	return c.Salts.DailySalt(ctx, day, fresh)
}

// A client's identifier holds for its UTC day and changes with the day's
// salt, which a process fetches once a day; a salt that cannot be fetched
// is an error, not an identifier under some other salt.
func TestAnIdentifierHoldsForItsUTCDayOnly(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	salts := &countingSalts{Salts: visitors.LocalSalts()}
	keys := visitors.NewKeys(salts, clock)
	ctx := context.Background()
	key := func() string {
		t.Helper()
		k, err := keys.Key(ctx, "198.51.100.1", "Firefox")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	first := key()
	if b, err := hex.DecodeString(first); err != nil || len(b) != 16 {
		t.Fatalf("key %q, want 16 bytes in hex", first)
	}
	tests := []struct {
		name    string
		at      time.Time
		same    bool // the day's first key
		fetches int
	}{
		{"the same second", now, true, 1},
		{"the end of the UTC day", time.Date(2026, 3, 1, 23, 59, 59, 0, time.UTC), true, 1},
		{"the next UTC day", time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), false, 2},
	}
	for _, tt := range tests {
		set(tt.at)
		if got := key(); (got == first) != tt.same {
			t.Errorf("%s: key %s, the day's first %s; want the same: %v", tt.name, got, first, tt.same)
		}
		if salts.fetches != tt.fetches {
			t.Errorf("%s: %d salt fetches, want %d", tt.name, salts.fetches, tt.fetches)
		}
	}
	id, err := keys.ID(ctx, "198.51.100.1", "Firefox")
	if err != nil || id.String() != key() {
		t.Errorf("ID %s, %v; want the key %s", id, err, key())
	}

	set(time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC))
	down := errors.New("MySQL is down")
	salts.mu.Lock()
	salts.fail = down
	salts.mu.Unlock()
	if _, err := keys.Key(ctx, "198.51.100.1"); !errors.Is(err, down) {
		t.Fatalf("Key without the day's salt: %v, want %v", err, down)
	}
	if _, err := keys.ID(ctx, "198.51.100.1"); !errors.Is(err, down) {
		t.Fatalf("ID without the day's salt: %v, want %v", err, down)
	}
}
