package cache

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"sync"
	"time"
)

// saltTTL keeps a day's salt a little longer than the day, so that a process
// whose clock lags a few minutes still finds the salt the others use.
const saltTTL = 48 * time.Hour

// clientKeys turns client identities (addresses, User-Agents) into Redis key
// parts without storing them: an HMAC-SHA256 under a random salt. A plain
// hash would not do, as every IPv4 address can be hashed in minutes and
// looked up. The salt lives in Redis, so all processes of the service derive
// the same keys, and it changes every UTC day and then expires, so keys
// cannot be linked across days and nothing can be reversed once it is gone.
type clientKeys struct {
	calls *redisCalls
	now   func() time.Time

	mu   sync.Mutex
	day  string // UTC date of salt
	salt []byte
}

func newClientKeys(calls *redisCalls) *clientKeys {
	return &clientKeys{calls: calls, now: time.Now}
}

// key returns hex(HMAC(salt, parts)). Each part is length-prefixed so that
// ("a\x00b", "c") and ("a", "b\x00c") differ.
func (k *clientKeys) key(ctx context.Context, parts ...string) (string, error) {
	salt, err := k.todaysSalt(ctx)
	if err != nil {
		return "", err
	}
	mac := hmac.New(sha256.New, salt)
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		mac.Write(n[:])
		mac.Write([]byte(p))
	}
	return hex.EncodeToString(mac.Sum(nil)[:16]), nil
}

// todaysSalt returns the shared salt of the current UTC day: the one some
// process already stored, or a new one that this process stores first. It
// is fetched from Redis once a day per process.
func (k *clientKeys) todaysSalt(ctx context.Context) ([]byte, error) {
	day := k.now().UTC().Format(time.DateOnly)
	k.mu.Lock()
	if k.day == day {
		salt := k.salt
		k.mu.Unlock()
		return salt, nil
	}
	k.mu.Unlock()

	// Several processes may race here; SETNX lets exactly one salt win and
	// everyone reads that one back.
	key := k.calls.keys.hitSalt(day)
	fresh := make([]byte, 32)
	rand.Read(fresh)
	var salt []byte
	err := k.calls.do(ctx, "salt", func(ctx context.Context) error {
		err := k.calls.rdb.SetNX(ctx, key, fresh, saltTTL).Err()
		if err == nil {
			salt, err = k.calls.rdb.Get(ctx, key).Bytes()
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.day, k.salt = day, salt
	k.mu.Unlock()
	return salt, nil
}
