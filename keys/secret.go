package keys

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// SecretPrefix starts every key's secret, so that a leaked one is
// recognised (by a person, or by a secret scanner) as this service's.
const SecretPrefix = "ck_"

// secretBytes is the randomness of a secret: 256 bits, twice the 128 the
// contract asks for.
const secretBytes = 32

// newSecret returns a fresh secret: the prefix and 256 random bits in
// URL-safe base64 (43 characters), safe in a header, a URL or a shell.
func newSecret() string {
	b := make([]byte, secretBytes)
	rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return SecretPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// hashSecret is what the store keeps of a secret. SHA-256, and not a
// password hash such as bcrypt or argon2, on purpose: those are slow to
// make guessing a low-entropy password expensive, but nobody can guess 256
// random bits, however fast each guess is. A fast hash lets the store find
// a key by its hash through a unique index (no per-key salt to try), costs
// under a microsecond per request instead of tens of milliseconds, and a
// stolen copy of the table still opens nothing.
func hashSecret(secret string) [32]byte { return sha256.Sum256([]byte(secret)) }

// looksLikeSecret reports whether s has the form of a key's secret; any
// other bearer is not looked up.
func looksLikeSecret(s string) bool {
	return strings.HasPrefix(s, SecretPrefix) && len(s) == len(SecretPrefix)+base64.RawURLEncoding.EncodedLen(secretBytes)
}
