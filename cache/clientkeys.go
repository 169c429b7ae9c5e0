package cache

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"io"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
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
	fetch singleflight.Group // concurrent hits at the turn of a day fetch its salt once

	mu  sync.Mutex
	cur *salted // of the current UTC day
}

// salted is one day's salt, with HMACs keyed by it for reuse: keying one
// costs two SHA-256 blocks and a few allocations, on every page hit.
type salted struct {
	day  int64 // UTC days since 1970
	macs sync.Pool
}

func newSalted(day int64, salt []byte) *salted {
	s := &salted{day: day}
	s.macs.New = func() any { return hmac.New(sha256.New, salt) }
	return s
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
	mac := salt.macs.Get().(hash.Hash)
	defer salt.macs.Put(mac)
	mac.Reset()
	var buf [sha256.Size]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(buf[:8], uint64(len(p)))
		mac.Write(buf[:8])
		io.WriteString(mac, p)
	}
	return hex.EncodeToString(mac.Sum(buf[:0])[:16]), nil
}

// todaysSalt returns the shared salt of the current UTC day: the one some
// process already stored, or a new one that this process stores first. It
// is fetched from Redis once a day per process.
func (k *clientKeys) todaysSalt(ctx context.Context) (*salted, error) {
	day := k.now().Unix() / (24 * 60 * 60) // a UTC day, cheaper than its date on every hit
	k.mu.Lock()
	cur := k.cur
	k.mu.Unlock()
	if cur != nil && cur.day == day {
		return cur, nil
	}

	v, err, _ := k.fetch.Do(strconv.FormatInt(day, 10), func() (any, error) { return k.fetchSalt(ctx, day) })
	if err != nil {
		return nil, err
	}
	return v.(*salted), nil
}

// fetchSalt reads or stores the salt of day.
func (k *clientKeys) fetchSalt(ctx context.Context, day int64) (*salted, error) {
	// Several processes may race here; SETNX lets exactly one salt win and
	// everyone reads that one back.
	key := k.calls.keys.hitSalt(time.Unix(day*24*60*60, 0).UTC().Format(time.DateOnly))
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
	cur := newSalted(day, salt)
	k.mu.Lock()
	k.cur = cur
	k.mu.Unlock()
	return cur, nil
}
