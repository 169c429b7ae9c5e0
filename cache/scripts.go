package cache

import (
	"crypto/rand"
	"encoding/base64"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/countersvc/countersvc/counters"
)

// A counter's entry is a hash {g: generation token, v: encoded counter}. Every
// script below touches that one key only, so they also run on Redis Cluster.
//
// Generations are unique tokens, not numbers: a reader that fills an entry
// must prove that nothing invalidated it since the reader looked, and a
// number would start again at 1 after Redis restarted empty (the reader's old
// "1" would match a new "1"). A token is never handed out twice.

// reserveScript gives a missing entry a generation, so that the reader that
// found it missing can fill it later under that generation. It answers
// {v or nil, g}.
var reserveScript = redis.NewScript(`
local g = redis.call('HGET', KEYS[1], 'g')
if not g then
  redis.call('HSET', KEYS[1], 'g', ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {false, ARGV[1]}
end
return {redis.call('HGET', KEYS[1], 'v'), g}
`)

// fillScript stores a value read from MySQL only if the entry still has the
// generation the reader saw before it read MySQL; a fill that arrives after
// an invalidation (late, slow, or replayed after a pause) changes nothing.
// The first fill of a generation wins: a later one, whose read may have
// begun earlier, must not replace a value that a reader has already been
// answered with. The entry then expires at ARGV[3], the end of the read's
// lease (lease.go): an absolute time, so a fill that runs late expires on
// time, and one that runs after its lease ended deletes the entry. It
// answers 1 when stored, 0 when the generation moved on, and the stored
// value when another fill won.
var fillScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'g') ~= ARGV[1] then
  return 0
end
local v = redis.call('HGET', KEYS[1], 'v')
if v then
  return v
end
redis.call('HSET', KEYS[1], 'v', ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
return 1
`)

// invalidateScript drops the value and gives the entry a new generation, so
// that fills prepared before the write are refused. The entry keeps a
// generation, which spares the next reader the reserve round trip. A missing
// entry stays missing: no reader holds a generation of it, and a reader
// that reserves one later reads MySQL after this write committed. So a
// counter that is written but never read costs Redis no memory.
var invalidateScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'g', ARGV[1])
redis.call('HDEL', KEYS[1], 'v')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// keyspace names every key of this package under one prefix, so that a
// Redis shared with other programs can be flushed of counter entries alone.
// Each kind of key has a part of its own after the prefix: "c:" counter
// entries, "l:" pages of listings, "hits:" the page-hit limits.
type keyspace struct{ prefix string }

func (k keyspace) counter(name string) string { return k.prefix + "c:" + name }

// counterPattern matches the entries of every counter whose name starts with
// namePrefix.
func (k keyspace) counterPattern(namePrefix string) string {
	return globEscape(k.counter("")) + globEscape(namePrefix) + "*"
}

// list is the key of one page of a listing. Names contain no control
// characters, so NUL separates the filter's parts unambiguously. A listing
// that hides the reserved names is another page than one of the same
// prefix that shows them (the admin's): it has a fourth part.
func (k keyspace) list(f counters.ListFilter) string {
	key := k.prefix + "l:" + strconv.Itoa(f.Limit) + "\x00" + f.Prefix + "\x00" + f.After
	if f.HideReserved {
		key += "\x00hide-reserved"
	}
	return key
}

// hitClient is the key of a client's page-hit limits (a salted hash, see
// visitors.Keys), a hash of its rate limit's state and its visitors' marks
// (see admitScript). The hash is a Redis Cluster hash tag, so that a
// client's hits of one pipeline may share a node.
func (k keyspace) hitClient(client string) string { return k.prefix + "hits:{" + client + "}" }

// globEscape quotes the characters that SCAN MATCH treats as wildcards.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// tokens hands out generation tokens: a random per-process base, so that two
// processes or two runs of one never collide, and a sequence number.
type tokens struct {
	base string
	n    atomic.Uint64
}

func newTokens() *tokens {
	b := make([]byte, 12)
	rand.Read(b)
	return &tokens{base: base64.RawURLEncoding.EncodeToString(b) + "."}
}

func (t *tokens) next() string { return t.base + strconv.FormatUint(t.n.Add(1), 36) }
