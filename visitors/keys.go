package visitors

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"
)

// SaltSize is the length of a day's salt.
const SaltSize = 32

// Salts keep one random salt per UTC day where every process of the service
// finds it (storage/ keeps them in MySQL, the store of record, so that a
// lost Redis changes no visitor's identity within the day).
type Salts interface {
	// DailySalt returns the salt of the UTC day that starts at day, storing
	// fresh as that salt if the day has none yet: concurrent callers with
	// different fresh salts all get the one that was stored first.
	DailySalt(ctx context.Context, day time.Time, fresh []byte) ([]byte, error)
}

// Keys turn client identities (addresses, User-Agents) into opaque
// identifiers without storing them: an HMAC-SHA256 under the salt of the
// current UTC day. A plain hash would not do, as every IPv4 address can be
// hashed in minutes and looked up. The salt changes every UTC day and is
// then destroyed (see the store's purge), so identifiers cannot be linked
// across days, nor reversed once the salt is gone. The page-hit limits key
// their Redis state by them, and the visitor count is of them.
type Keys struct {
	salts Salts
	now   func() time.Time
	fetch singleflight.Group // concurrent hits at the turn of a day fetch its salt once

	cur atomic.Pointer[DayKey] // of the current UTC day, read on every hit
}

// DayKey is one UTC day's salt, with HMACs keyed by it for reuse: keying
// one costs two SHA-256 blocks and a few allocations, on every page hit.
type DayKey struct {
	day  int64     // UTC days since 1970
	macs sync.Pool // of *keyedMAC
}

// keyedMAC is an HMAC under a day's salt with a buffer for its input,
// which it takes in one write: hash.Hash takes no string, and writing
// each part would copy it to the heap first.
type keyedMAC struct {
	mac hash.Hash
	in  []byte
}

// macInputKept bounds the input buffer a pooled keyedMAC keeps (a long
// User-Agent would otherwise stay in the pool).
const macInputKept = 1 << 10

// NewKeys returns the keys under the salts; now is the clock that says
// which day it is (nil: time.Now).
func NewKeys(salts Salts, now func() time.Time) *Keys {
	if now == nil {
		now = time.Now
	}
	return &Keys{salts: salts, now: now}
}

// ID is a client's identifier of the day: the first bytes of the HMAC.
type ID [16]byte

// String is the identifier in hex, for use in keys.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Key returns hex(ID(parts)), for Redis keys.
func (k *Keys) Key(ctx context.Context, parts ...string) (string, error) {
	id, err := k.ID(ctx, parts...)
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

// ID returns today's identifier of parts (see DayKey.ID).
func (k *Keys) ID(ctx context.Context, parts ...string) (ID, error) {
	d, err := k.Today(ctx)
	if err != nil {
		return ID{}, err
	}
	return d.ID(parts...), nil
}

// Day is the UTC day of d, as UTC days since 1970.
func (d *DayKey) Day() int64 { return d.day }

// ID returns HMAC(the day's salt, parts). Each part is length-prefixed so
// that ("a\x00b", "c") and ("a", "b\x00c") differ.
func (d *DayKey) ID(parts ...string) ID {
	m := d.macs.Get().(*keyedMAC)
	in := m.in[:0]
	for _, p := range parts {
		in = binary.BigEndian.AppendUint64(in, uint64(len(p)))
		in = append(in, p...)
	}
	return d.sum(m, in)
}

// Of returns ID(string(id[:]), part): an identifier derived from another
// (a visitor's on one page) without copying id to a string first.
func (d *DayKey) Of(id ID, part string) ID {
	m := d.macs.Get().(*keyedMAC)
	in := binary.BigEndian.AppendUint64(m.in[:0], uint64(len(id)))
	in = append(in, id[:]...)
	in = binary.BigEndian.AppendUint64(in, uint64(len(part)))
	in = append(in, part...)
	return d.sum(m, in)
}

// sum is the ID of in, the input m's buffer holds, and gives m back.
func (d *DayKey) sum(m *keyedMAC, in []byte) ID {
	m.mac.Reset()
	m.mac.Write(in)
	sum := m.mac.Sum(in[:0])
	var id ID
	copy(id[:], sum)
	if cap(sum) <= macInputKept {
		m.in = sum[:0]
	} else {
		m.in = nil
	}
	d.macs.Put(m)
	return id
}

// Today returns the key of the current UTC day, its salt fetched from the
// store once a day per process. A page hit takes it once for all of its
// identifiers, and counts its visitor on its day.
func (k *Keys) Today(ctx context.Context) (*DayKey, error) {
	day := k.now().Unix() / (24 * 60 * 60) // a UTC day, cheaper than its date on every hit
	if cur := k.cur.Load(); cur != nil && cur.day == day {
		return cur, nil
	}
	v, err, _ := k.fetch.Do(strconv.FormatInt(day, 10), func() (any, error) {
		fresh := make([]byte, SaltSize)
		rand.Read(fresh)
		salt, err := k.salts.DailySalt(ctx, time.Unix(day*24*60*60, 0).UTC(), fresh)
		if err != nil {
			return nil, err
		}
		d := &DayKey{day: day}
		d.macs.New = func() any { return &keyedMAC{mac: hmac.New(sha256.New, salt), in: make([]byte, 0, 256)} }
		if cur := k.cur.Load(); cur == nil || cur.day < day {
			k.cur.CompareAndSwap(cur, d) // a lost race leaves another's, as new
		}
		return d, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*DayKey), nil
}

// LocalSalts are salts kept in this process alone, for a service of one
// process without a shared store (tests, tools): another process would
// draw other salts and so tell other identifiers.
func LocalSalts() Salts { return &localSalts{days: map[time.Time][]byte{}} }

type localSalts struct {
	mu   sync.Mutex
	days map[time.Time][]byte
}

func (l *localSalts) DailySalt(_ context.Context, day time.Time, fresh []byte) ([]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s, ok := l.days[day]; ok {
		return s, nil
	}
	clear(l.days) // only today's is needed
	l.days[day] = fresh
	return fresh, nil
}
