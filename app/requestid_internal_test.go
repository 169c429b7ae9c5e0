package app

import (
	"crypto/rand"
	"testing"
)

// Fresh request ids look as crypto/rand.Text's did (26 characters of
// base32) and do not repeat, also when drawn from many goroutines.
func TestFreshRequestIDsAreTextLikeAndDistinct(t *testing.T) {
	want := len(rand.Text())
	seen := map[string]bool{}
	ids := make(chan string, 4000)
	for range 4 {
		go func() {
			for range 1000 {
				ids <- newRequestID()
			}
		}()
	}
	for range 4000 {
		id := <-ids
		if len(id) != want || !validRequestID(id) {
			t.Fatalf("id %q: want %d characters of base32", id, want)
		}
		if seen[id] {
			t.Fatalf("id %q drawn twice", id)
		}
		seen[id] = true
	}
}
