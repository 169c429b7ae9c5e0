package visitors_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"strings"
	"testing"
	"time"

	"github.com/countersvc/countersvc/visitors"
)

// fixedSalts hands out one salt for every day.
type fixedSalts []byte

func (f fixedSalts) DailySalt(context.Context, time.Time, []byte) ([]byte, error) { return f, nil }

// An identifier is HMAC-SHA256 under the day's salt of the length-prefixed
// parts, cut to 16 bytes: every process of the service, of this version or
// another, must tell the same client by the same identifier, or the limits
// it keys in Redis would not be shared while they run side by side.
func TestIDIsTheHMACOfTheLengthPrefixedParts(t *testing.T) {
	salt := []byte(strings.Repeat("s", visitors.SaltSize))
	want := func(parts ...string) visitors.ID {
		mac := hmac.New(sha256.New, salt)
		for _, p := range parts {
			mac.Write(binary.BigEndian.AppendUint64(nil, uint64(len(p))))
			mac.Write([]byte(p))
		}
		var id visitors.ID
		copy(id[:], mac.Sum(nil))
		return id
	}
	day, err := visitors.NewKeys(fixedSalts(salt), nil).Today(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tests := [][]string{
		{"198.51.100.1"},
		{"198.51.100.1", "Mozilla/5.0 (X11; Linux x86_64) Firefox/140"},
		{"2001:db8::/64", "hits/a"},
		{""},
		{strings.Repeat("a very long User-Agent ", 200)}, // past what a pooled buffer keeps
	}
	for _, parts := range tests {
		// Twice: the second takes its HMAC and buffer from the pool.
		for range 2 {
			if got, want := day.ID(parts...), want(parts...); got != want {
				t.Errorf("ID(%q) = %x, want %x", parts, got, want)
			}
		}
	}
	if day.ID("a\x00b", "c") == day.ID("a", "b\x00c") {
		t.Error(`ID("a\x00b", "c") = ID("a", "b\x00c"): the parts' boundaries are lost`)
	}
}
