package storage_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/countersvc/countersvc/counters"
	"github.com/countersvc/countersvc/internal/storetest"
	"github.com/countersvc/countersvc/storage"
)

// Idempotency keys recorded before API keys existed were sent with the one
// admin token: migration 005 gives them to it (key id 0), so its retries
// still replay them, and no API key's do.
func TestKeysRecordedBeforeAPIKeysBelongToTheAdminToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, db := storetest.OpenStore(t, storetest.MigratedDSN(t))
	// Back to the table as 004 left it, with one recorded answer in it.
	if _, err := db.ExecContext(ctx, "ALTER TABLE idempotency_record DROP PRIMARY KEY, DROP COLUMN key_id, ADD PRIMARY KEY (idem_key)"); err != nil {
		t.Fatal(err)
	}
	if err := storage.ForceMigration(ctx, db.DB, 4); err != nil {
		t.Fatal(err)
	}
	old := counters.Idempotency{Key: "order-1", Fingerprint: [32]byte{7}}
	recorded, _ := json.Marshal(int64(42))
	if _, err := db.ExecContext(ctx, `INSERT INTO idempotency_record (idem_key, fingerprint, result, created_at, expires_at)
		VALUES (?, ?, ?, NOW(6), NOW(6) + INTERVAL 1 DAY)`, old.Key, old.Fingerprint[:], recorded); err != nil {
		t.Fatal(err)
	}
	if err := storage.Migrate(ctx, db.DB); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name         string
		owner        int64
		wantValue    int64
		wantReplayed bool
	}{
		{"the admin token's retry replays the old answer", 0, 42, true},
		{"an API key's request with the same key runs anew", 5, 1, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			key := old
			key.Owner = c.owner
			v, replayed, err := s.IncrementOnce(ctx, key, "sales", 1)
			if err != nil || v != c.wantValue || replayed != c.wantReplayed {
				t.Fatalf("IncrementOnce = %d, %v, %v; want %d, %v", v, replayed, err, c.wantValue, c.wantReplayed)
			}
		})
	}
}
